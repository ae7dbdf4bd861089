-- Retention: an old event is deleted once no delivery refers to it; finding those needs the
-- deliveries by event (only accounts with webhooks pay for this index).
CREATE INDEX deliveries_event ON deliveries(event_id);
