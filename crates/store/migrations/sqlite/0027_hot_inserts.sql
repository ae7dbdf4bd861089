-- Nothing on SQLite: its foreign keys are checked in the writer's own process, against
-- pages it holds, with no lock to take (see the PostgreSQL migration of the same name).
SELECT 1;
