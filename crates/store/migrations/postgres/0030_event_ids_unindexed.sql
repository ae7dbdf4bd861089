-- Events are no longer indexed by their event id. Nothing looks an event up by it (the
-- deliveries refer to `events.id`; the webhook header and the console only show it), and
-- it is unique by construction: 19 digits of the clock in nanoseconds and 13 random
-- letters and digits (`events::new_event_id`). The index still cost every event a second
-- B-tree insert, 1-2.5 us of the 8.6-11.2 us an event row costs, four events per SMS
-- (docs/benchmarks.md).
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_event_id_key;
