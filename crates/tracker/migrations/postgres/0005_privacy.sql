-- fragstat track schema, version 5: players forgotten on request (issue 34).
--
-- `fragstat track forget NAME` deletes a player's identities, sessions and search entries and
-- keeps the name here: the rounds never store a player of that name again (as they never
-- store the names of the configuration's `[privacy] opt_out`).
CREATE TABLE forgotten (
    name TEXT PRIMARY KEY,            -- as `players.name` keys it: colours stripped, lower case
    at BIGINT NOT NULL                -- when it was forgotten
);
