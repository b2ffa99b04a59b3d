-- 0002 as of 2198ecf -> 6c3d955: the players' last-sighting index without the name
-- (PostgreSQL reads the rows).
DROP INDEX players_last_seen;
CREATE INDEX players_last_seen ON players (last_seen);
