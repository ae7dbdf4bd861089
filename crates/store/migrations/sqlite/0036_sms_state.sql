-- Nothing changes on SQLite: a status move there rewrites the SMS's row and nothing else
-- already (migration 0033). PostgreSQL's SMS split into what they carry and their moving
-- state (see the PostgreSQL migration of the same name).
SELECT 1;
