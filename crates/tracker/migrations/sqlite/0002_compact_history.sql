-- fragstat track schema, version 2 (sqlite): compact history. What changed is stored, not
-- snapshots: servers and players get integer ids, players' time on a server is a session
-- (joined, left), a server's state (name, map, gametype, slots, up/down) a row when it
-- changes, and the per-round numbers (players, bots, rtt) a narrow series, downsampled
-- after an age. The SQLite and PostgreSQL migrations are the same schema; the byte-string
-- type (BLOB / BYTEA), the integer key (INTEGER PRIMARY KEY / an identity column) and the
-- blocks between `-- backend-specific: begin` and `-- backend-specific: end` differ (the
-- name search: FTS5 trigrams here, pg_trgm there). Times are Unix milliseconds.
--
-- From version 1: servers keep their rows (now with ids); snapshots become the per-round
-- series and state changes (map, slots, up/down; the name and gametype only from the
-- servers' latest state, as version 1 kept them only inside the JSON records, which are
-- dropped); player_snapshots become players and sessions (a gaps-and-islands query: a player
-- seen in consecutive rounds of a server is one session; two players of one name on one
-- server in one round become one).

-- The latest state of every server ever seen (the browser's rows), now keyed by an id. The
-- row is written when its state changes; the numbers that change every round (players,
-- bots, ping, last seen) are read from its `server_latest` row.
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
INSERT INTO servers2 (addr, game, first_seen, last_seen, last_online, status, error, name_raw,
    name, dialect, map, gametype, num_players, max_players, num_bots, rtt_ms, up_since,
    down_since, record)
SELECT addr, game, first_seen, last_seen, last_online, status, error, name_raw, name, dialect,
    map, gametype, num_players, max_players, num_bots, rtt_ms,
    CASE WHEN status = 'online' THEN last_online END,
    CASE WHEN status <> 'online' THEN COALESCE(last_online, first_seen) END,
    record
FROM servers ORDER BY first_seen, addr;

-- The numbers of every server in every round, for the chart and uptime: per round for
-- `raw_hours`, then one row per `bucket_minutes` in `series_agg`. Keyed by the round first:
-- a round's rows are appended at the end of the table (a server-first key would dirty one
-- page per server every round, all over a table of 14 million rows at steady state), and
-- the downsampling deletes the oldest rounds from its beginning. A server's rows are read
-- round by round through `rounds` (an index seek each).
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

INSERT INTO series (server_id, at, status, players, rtt)
SELECT s.id, n.at,
    CASE n.status WHEN 'online' THEN 0 WHEN 'timeout' THEN 1 WHEN 'down' THEN 2 ELSE 3 END,
    n.num_players, CAST(ROUND(n.rtt_ms * 10) AS BIGINT)
FROM snapshots n JOIN servers2 s ON s.addr = n.addr ORDER BY n.at, s.id;

-- Each server's numbers of the last round that probed it (its latest `series` row): the
-- browser's players, bots, ping and last seen. Rewritten every round for every server
-- probed: 10,000 narrow rows, about a hundred pages.
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

-- Downsampled series: one row per server per bucket once the rounds are older than
-- `raw_hours`. Keyed by the bucket first, like `series`: a bucket's rows are appended, the
-- expired ones deleted from the table's beginning; a server's rows are read bucket by
-- bucket.
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

-- A server's state from `at` on, a row each time it changes: up or down, and while up its
-- name, map, gametype, slots and password.
CREATE TABLE server_changes (
    server_id BIGINT NOT NULL,
    at BIGINT NOT NULL,
    online BIGINT NOT NULL,           -- 1 answered, 0 not
    name_raw BLOB,
    dialect TEXT,
    map TEXT,
    gametype TEXT,
    max_players BIGINT,
    password BIGINT,
    PRIMARY KEY (server_id, at)
);
CREATE INDEX server_changes_at ON server_changes (at);

-- Changes from version 1's snapshots: the rows where up/down, the map or the slots differ
-- from the server's previous snapshot.
INSERT INTO server_changes (server_id, at, online, name_raw, dialect, map, gametype,
    max_players)
SELECT c.id, c.at, c.online,
    CASE WHEN c.online = 1 THEN c.name_raw END, CASE WHEN c.online = 1 THEN c.dialect END,
    c.map, CASE WHEN c.online = 1 THEN c.gametype END, c.max_players
FROM (
    SELECT s.id, n.at, CASE WHEN n.status = 'online' THEN 1 ELSE 0 END AS online,
        n.map, n.max_players, s.name_raw, s.dialect, s.gametype,
        LAG(n.status) OVER w AS prev_status, LAG(n.map) OVER w AS prev_map,
        LAG(n.max_players) OVER w AS prev_max,
        ROW_NUMBER() OVER w AS rn
    FROM snapshots n JOIN servers2 s ON s.addr = n.addr
    WINDOW w AS (PARTITION BY n.addr ORDER BY n.at)
) c
WHERE c.rn = 1
    OR (c.prev_status = 'online') <> (c.online = 1)
    OR COALESCE(c.map, '') <> COALESCE(c.prev_map, '')
    OR COALESCE(c.max_players, -1) <> COALESCE(c.prev_max, -1);

-- Every player identity ever seen: a name's bytes in a dialect.
CREATE TABLE players (
    id INTEGER PRIMARY KEY,
    name_raw BLOB NOT NULL,           -- lossless
    dialect TEXT NOT NULL,
    name TEXT NOT NULL,               -- search key: colours stripped, lower case
    first_seen BIGINT NOT NULL,
    last_seen BIGINT NOT NULL,        -- refreshed when a session opens or closes, and at
                                      -- least every `flush_rounds` rounds while on
    last_server_id BIGINT             -- where it was last seen
);
CREATE UNIQUE INDEX players_identity ON players (name_raw, dialect);
-- By last sighting: the search walks it newest first, retention deletes by it. (SQLite's
-- holds the search key too, read from the index itself; PostgreSQL reads the rows.)
-- backend-specific: begin
CREATE INDEX players_last_seen ON players (last_seen, name);
-- backend-specific: end

INSERT INTO players (name_raw, dialect, name, first_seen, last_seen)
SELECT name_raw, dialect, MIN(name), MIN(at), MAX(at)
FROM player_snapshots GROUP BY name_raw, dialect ORDER BY MIN(at);

-- A player's time on a server: from the round it was first seen in to the round that saw it
-- gone (`left_at`, NULL while on).
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    player_id BIGINT NOT NULL,
    server_id BIGINT NOT NULL,
    nth BIGINT NOT NULL,              -- 0, or n for the n+1st player of that name on the server
    joined BIGINT NOT NULL,
    last_seen BIGINT NOT NULL,        -- last round it was seen in (see players.last_seen)
    left_at BIGINT,
    last_score BIGINT,
    team BIGINT,
    is_bot BIGINT,                    -- 1, 0, or NULL when the game does not say
    clan_raw BLOB                     -- the clan's bytes, where the game has clans
);
CREATE INDEX sessions_player ON sessions (player_id, joined);
-- Closed sessions by when they ended (retention): an open session is not in it, so a
-- session's opening adds nothing here and its closing appends at the end.
CREATE INDEX sessions_left ON sessions (left_at) WHERE left_at IS NOT NULL;
CREATE UNIQUE INDEX sessions_open ON sessions (server_id, player_id, nth) WHERE left_at IS NULL;
CREATE INDEX sessions_open_player ON sessions (player_id) WHERE left_at IS NULL;

-- Sessions from version 1's player rows: islands of consecutive online snapshots of a server
-- in which the player was seen.
INSERT INTO sessions (player_id, server_id, nth, joined, last_seen, left_at, last_score, team,
    is_bot)
SELECT p.id, i.server_id, 0, i.joined, i.last_seen,
    CASE WHEN i.last_seen < i.server_last THEN i.last_seen END,
    (SELECT MIN(q.score) FROM player_snapshots q JOIN servers2 s2 ON s2.addr = q.addr
        WHERE s2.id = i.server_id AND q.at = i.last_seen AND q.name_raw = i.name_raw
        AND q.dialect = i.dialect),
    NULL, i.is_bot
FROM (
    SELECT g.server_id, g.name_raw, g.dialect, MIN(g.at) AS joined, MAX(g.at) AS last_seen,
        MAX(g.is_bot) AS is_bot, MAX(g.server_last) AS server_last
    FROM (
        SELECT t.server_id, t.name_raw, t.dialect, t.at, t.is_bot, t.server_last,
            t.server_rn - ROW_NUMBER() OVER (PARTITION BY t.server_id, t.name_raw, t.dialect
                ORDER BY t.at) AS island
        FROM (
            SELECT DISTINCT r.server_id, ps.name_raw, ps.dialect, ps.at, r.server_rn,
                r.server_last, ps.is_bot
            FROM player_snapshots ps JOIN (
                SELECT s.id AS server_id, n.addr, n.at,
                    ROW_NUMBER() OVER (PARTITION BY n.addr ORDER BY n.at) AS server_rn,
                    MAX(n.at) OVER (PARTITION BY n.addr) AS server_last
                FROM snapshots n JOIN servers2 s ON s.addr = n.addr
                WHERE n.status = 'online'
            ) r ON r.addr = ps.addr AND r.at = ps.at
        ) t
    ) g
    GROUP BY g.server_id, g.name_raw, g.dialect, g.island
) i JOIN players p ON p.name_raw = i.name_raw AND p.dialect = i.dialect;

UPDATE players SET last_server_id = (
    SELECT s.server_id FROM sessions s WHERE s.player_id = players.id
    ORDER BY s.last_seen DESC LIMIT 1
);

DROP TABLE player_snapshots;
DROP TABLE snapshots;
DROP TABLE servers;
ALTER TABLE servers2 RENAME TO servers;
CREATE INDEX servers_game ON servers (game);

-- The player search: names by substring.
-- backend-specific: begin
CREATE VIRTUAL TABLE players_search USING fts5(name, content='players', content_rowid='id',
    tokenize='trigram');
INSERT INTO players_search (rowid, name) SELECT id, name FROM players;
CREATE TRIGGER players_search_insert AFTER INSERT ON players BEGIN
    INSERT INTO players_search (rowid, name) VALUES (new.id, new.name);
END;
CREATE TRIGGER players_search_delete AFTER DELETE ON players BEGIN
    INSERT INTO players_search (players_search, rowid, name) VALUES ('delete', old.id, old.name);
END;
-- backend-specific: end
