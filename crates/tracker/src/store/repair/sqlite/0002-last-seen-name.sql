-- 0002 as of 76f3081 -> e10cce9: the players' last-sighting index holds the search key.
DROP INDEX players_last_seen;
CREATE INDEX players_last_seen ON players (last_seen, name);
