-- The voice network each call leg is carried on (`simulated`, or a SIP trunk by its name):
-- the actions of a scenario on the call go to that network.
ALTER TABLE calls ADD COLUMN network TEXT NOT NULL DEFAULT 'simulated';
