-- Nothing on SQLite: an update removes the old index entry at once (see the PostgreSQL
-- migration of the same name).
SELECT 1;
