-- 0002 as of e10cce9 -> 2198ecf: the names and their trigram index in `players_search`,
-- filled by a trigger, in place of the trigram index on `players`.
DROP INDEX players_search;
CREATE TABLE players_search (
    id BIGINT PRIMARY KEY REFERENCES players (id) ON DELETE CASCADE,
    name TEXT NOT NULL
);
INSERT INTO players_search (id, name) SELECT id, name FROM players;
CREATE INDEX players_search_name ON players_search USING gin (name gin_trgm_ops);
CREATE FUNCTION players_search_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO players_search (id, name) VALUES (NEW.id, NEW.name);
    RETURN NULL;
END
$$;
CREATE TRIGGER players_search_insert AFTER INSERT ON players
    FOR EACH ROW EXECUTE FUNCTION players_search_insert();
