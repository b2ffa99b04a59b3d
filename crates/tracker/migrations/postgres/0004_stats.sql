-- fragstat track schema, version 4: stats (issue 34). The SQLite and PostgreSQL migrations
-- are the same. Times are Unix milliseconds.

-- Each game's totals: a row per game per round (rounds = 1), downsampled like the series
-- into a row per game per bucket once older than `raw_hours` (rounds = the rounds summed).
-- The stats pages' players-over-time charts, peaks and records read these: a row per game,
-- not per server. Written by the upkeep after each round from the round's series rows.
CREATE TABLE game_series (
    at BIGINT NOT NULL,               -- the round, or the bucket's start
    game TEXT NOT NULL,               -- registry id
    rounds BIGINT NOT NULL,           -- rounds summed into the row
    servers BIGINT NOT NULL,          -- servers probed, summed over the rounds
    online BIGINT NOT NULL,           -- servers that answered, summed over the rounds
    players BIGINT NOT NULL,          -- players (bots included), summed over the rounds
    bots BIGINT NOT NULL,             -- bots (where known), summed over the rounds
    humans_max BIGINT NOT NULL,       -- most humans (players less bots) in one of the rounds
    PRIMARY KEY (at, game)
);
-- A game's rows by time.
CREATE INDEX game_series_game ON game_series (game, at);

-- The game's totals of the history kept so far: per round from the series, per bucket from
-- the downsampled series (whose per-round maximum is not kept: its averages stand in).
INSERT INTO game_series (at, game, rounds, servers, online, players, bots, humans_max)
SELECT a.at, s.game, MAX(a.rounds), SUM(a.rounds), SUM(a.online),
    CAST(ROUND(SUM(COALESCE(a.players_avg, 0) * a.rounds)) AS BIGINT),
    CAST(ROUND(SUM(COALESCE(a.bots_avg, 0) * a.rounds)) AS BIGINT),
    CAST(ROUND(SUM(COALESCE(a.players_avg, 0) - COALESCE(a.bots_avg, 0))) AS BIGINT)
FROM series_agg a JOIN servers s ON s.id = a.server_id GROUP BY a.at, s.game;
INSERT INTO game_series (at, game, rounds, servers, online, players, bots, humans_max)
SELECT x.at, s.game, 1, COUNT(*), SUM(CASE WHEN x.status = 0 THEN 1 ELSE 0 END),
    SUM(CASE WHEN x.status = 0 THEN COALESCE(x.players, 0) ELSE 0 END),
    SUM(CASE WHEN x.status = 0 THEN COALESCE(x.bots, 0) ELSE 0 END),
    SUM(CASE WHEN x.status = 0 THEN COALESCE(x.players, 0) - COALESCE(x.bots, 0) ELSE 0 END)
FROM series x JOIN servers s ON s.id = x.server_id GROUP BY x.at, s.game
ON CONFLICT (at, game) DO NOTHING;

-- The most humans seen at once (in one round): per game, and `*` for the whole site.
CREATE TABLE stats_records (
    scope TEXT PRIMARY KEY,           -- a game's registry id, or `*`
    humans BIGINT NOT NULL,
    at BIGINT NOT NULL                -- the round (or bucket) it was seen in
);

-- Where the stats' upkeep stands: `rounds`, the last round totalled into game_series and
-- map_time; `sessions`, sessions that ended up to this time are in play_time.
CREATE TABLE stats_state (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);

-- Time played per player per game in a calendar week (`span` 7, from Monday 00:00 UTC) or
-- month (`span` 30, from the 1st, 00:00 UTC), from the sessions that ended in it (a
-- session across the start of a period is split); bots' sessions are left out.
CREATE TABLE play_time (
    span BIGINT NOT NULL,             -- 7 or 30
    period BIGINT NOT NULL,           -- the period's start
    game TEXT NOT NULL,
    player_id BIGINT NOT NULL,
    ms BIGINT NOT NULL,
    PRIMARY KEY (span, period, game, player_id)
);
-- The top of a game's period, read from its end.
CREATE INDEX play_time_top ON play_time (span, period, game, ms);

-- Time per map per game in a calendar week or month: how long servers ran it (answering)
-- and how long humans played on it (humans × the time between rounds).
CREATE TABLE map_time (
    span BIGINT NOT NULL,
    period BIGINT NOT NULL,
    game TEXT NOT NULL,
    map TEXT NOT NULL,
    server_ms BIGINT NOT NULL,
    player_ms BIGINT NOT NULL,
    PRIMARY KEY (span, period, game, map)
);

-- A server's ended sessions by when they ended: its top players. (Ended only: a session's
-- opening adds nothing here, its closing one entry.)
CREATE INDEX sessions_server ON sessions (server_id, left_at) WHERE left_at IS NOT NULL;
