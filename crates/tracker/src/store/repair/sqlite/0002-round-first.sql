-- 0002 as of db518fe -> 76f3081: server ids never reused (AUTOINCREMENT); the series keyed by
-- the round first, without their `at` indexes; `server_latest`; `sessions_left` partial.
-- The tables are rebuilt with the statements of the current 0002, rows and ids kept.
CREATE TABLE servers2 (
-- backend-specific: begin
    -- never reused (AUTOINCREMENT): rows of a deleted server that age out later (its
    -- series) must not become a new server's
    id INTEGER PRIMARY KEY AUTOINCREMENT,
-- backend-specific: end
    addr TEXT NOT NULL UNIQUE,        -- ip:port as queried
    game TEXT NOT NULL,               -- registry id
    first_seen BIGINT NOT NULL,
    last_seen BIGINT NOT NULL,        -- last round that probed it
    last_online BIGINT,               -- last round it answered in
    status TEXT NOT NULL,             -- online | timeout | down | error
    error TEXT,
    name_raw BLOB,                    -- the name's bytes, lossless (colour codes kept)
    name TEXT,                        -- for search: colours stripped, lower case
    dialect TEXT,                     -- how to show name_raw (docs/json.md)
    map TEXT,
    gametype TEXT,
    num_players BIGINT,
    max_players BIGINT,
    num_bots BIGINT,
    rtt_ms DOUBLE PRECISION,
    password BIGINT,                  -- 1, 0, or NULL when the game does not say
    country TEXT,                     -- ISO 3166 alpha-2, when known
    up_since BIGINT,                  -- first round of its current online spell
    down_since BIGINT,                -- first round of its current offline spell (NULL online)
    record TEXT NOT NULL,             -- its latest JSON record (players left out: sessions)
    record_hash BIGINT                -- the writer's hash of it (rewritten when it changes)
);
INSERT INTO servers2 (id, addr, game, first_seen, last_seen, last_online, status, error,
    name_raw, name, dialect, map, gametype, num_players, max_players, num_bots, rtt_ms,
    password, country, up_since, down_since, record, record_hash)
SELECT id, addr, game, first_seen, last_seen, last_online, status, error, name_raw, name,
    dialect, map, gametype, num_players, max_players, num_bots, rtt_ms, password, country,
    up_since, down_since, record, record_hash
FROM servers ORDER BY id;
DROP TABLE servers;
ALTER TABLE servers2 RENAME TO servers;
CREATE INDEX servers_game ON servers (game);
-- The next id above every id still named anywhere (ids were reused before AUTOINCREMENT).
DELETE FROM sqlite_sequence WHERE name = 'servers';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'servers', MAX(id) FROM (
    SELECT MAX(id) AS id FROM servers
    UNION ALL SELECT MAX(server_id) FROM series
    UNION ALL SELECT MAX(server_id) FROM series_agg
    UNION ALL SELECT MAX(server_id) FROM server_changes
    UNION ALL SELECT MAX(server_id) FROM sessions
    UNION ALL SELECT MAX(last_server_id) FROM players
) HAVING MAX(id) IS NOT NULL;

ALTER TABLE series RENAME TO series_old;
CREATE TABLE series (
    at BIGINT NOT NULL,               -- the round
    server_id BIGINT NOT NULL,
    status BIGINT NOT NULL,           -- 0 online, 1 timeout, 2 down, 3 error
    players BIGINT,                   -- when online: players (bots included)
    bots BIGINT,                      -- bots, where known
    rtt BIGINT,                       -- round-trip time in tenths of a millisecond
    PRIMARY KEY (at, server_id)
)
-- backend-specific: begin
WITHOUT ROWID
-- backend-specific: end
;
INSERT INTO series (at, server_id, status, players, bots, rtt)
SELECT at, server_id, status, players, bots, rtt FROM series_old ORDER BY at, server_id;
DROP TABLE series_old;

CREATE TABLE server_latest (
    server_id BIGINT PRIMARY KEY,
    at BIGINT NOT NULL,               -- the last round that probed it
    status BIGINT NOT NULL,           -- as in `series`
    players BIGINT,
    bots BIGINT,
    rtt BIGINT
)
-- backend-specific: begin
WITHOUT ROWID
-- backend-specific: end
;
INSERT INTO server_latest (server_id, at, status, players, bots, rtt)
SELECT x.server_id, x.at, x.status, x.players, x.bots, x.rtt FROM series x
JOIN (SELECT server_id, MAX(at) AS at FROM series GROUP BY server_id) m
    ON m.server_id = x.server_id AND m.at = x.at;

ALTER TABLE series_agg RENAME TO series_agg_old;
CREATE TABLE series_agg (
    at BIGINT NOT NULL,               -- the bucket's start
    server_id BIGINT NOT NULL,
    rounds BIGINT NOT NULL,           -- rounds probed in the bucket
    online BIGINT NOT NULL,           -- of those, answered
    players_min BIGINT,
    players_avg DOUBLE PRECISION,
    players_max BIGINT,
    bots_avg DOUBLE PRECISION,
    rtt_avg DOUBLE PRECISION,         -- tenths of a millisecond
    PRIMARY KEY (at, server_id)
)
-- backend-specific: begin
WITHOUT ROWID
-- backend-specific: end
;
INSERT INTO series_agg (at, server_id, rounds, online, players_min, players_avg, players_max,
    bots_avg, rtt_avg)
SELECT at, server_id, rounds, online, players_min, players_avg, players_max, bots_avg, rtt_avg
FROM series_agg_old ORDER BY at, server_id;
DROP TABLE series_agg_old;

DROP INDEX sessions_left;
CREATE INDEX sessions_left ON sessions (left_at) WHERE left_at IS NOT NULL;
