-- fragstat track schema, version 1 (postgres). The SQLite and PostgreSQL migrations are the same
-- schema; only the byte-string type differs (BLOB / BYTEA). Times are Unix milliseconds.

-- One row per polling round.
CREATE TABLE rounds (
    at BIGINT PRIMARY KEY,            -- when the round started
    finished BIGINT NOT NULL,         -- when its results were written
    servers BIGINT NOT NULL,          -- servers probed
    online BIGINT NOT NULL,           -- servers that answered
    players BIGINT NOT NULL           -- players on the servers that answered
);

-- The latest state of every server ever seen (the browser's rows).
CREATE TABLE servers (
    addr TEXT PRIMARY KEY,            -- ip:port as queried
    game TEXT NOT NULL,               -- registry id
    first_seen BIGINT NOT NULL,
    last_seen BIGINT NOT NULL,        -- last round that probed it
    last_online BIGINT,               -- last round it answered in
    status TEXT NOT NULL,             -- online | timeout | error
    error TEXT,
    name_raw BYTEA,                   -- the name's bytes, lossless (colour codes kept)
    name TEXT,                        -- for search: colours stripped, lower case
    dialect TEXT,                     -- quake | plain: how to show name_raw
    map TEXT,
    gametype TEXT,
    num_players BIGINT,
    max_players BIGINT,
    num_bots BIGINT,
    rtt_ms DOUBLE PRECISION,
    record TEXT NOT NULL              -- the server's JSON record as fragstat writes it (docs/json.md)
);
CREATE INDEX servers_game ON servers (game);

-- One row per server per round.
CREATE TABLE snapshots (
    addr TEXT NOT NULL,
    at BIGINT NOT NULL,               -- the round
    status TEXT NOT NULL,
    num_players BIGINT,
    max_players BIGINT,
    rtt_ms DOUBLE PRECISION,
    map TEXT,
    record TEXT,                      -- the JSON record, players left out (they are below);
                                      -- NULL with snapshot_records = false
    PRIMARY KEY (addr, at)
);
CREATE INDEX snapshots_at ON snapshots (at);

-- One row per player per server per round: who was seen where, when, with what score.
CREATE TABLE player_snapshots (
    addr TEXT NOT NULL,
    at BIGINT NOT NULL,               -- the round (the time the player was seen)
    idx BIGINT NOT NULL,              -- position in the server's list
    name_raw BYTEA NOT NULL,          -- lossless
    name TEXT NOT NULL,               -- for search: colours stripped, lower case
    dialect TEXT NOT NULL,
    score BIGINT,
    ping BIGINT,
    team BIGINT,
    is_bot BIGINT,                    -- 1, 0, or NULL when the game does not say
    PRIMARY KEY (addr, at, idx)
);
CREATE INDEX player_snapshots_at ON player_snapshots (at);
CREATE INDEX player_snapshots_name ON player_snapshots (name);
