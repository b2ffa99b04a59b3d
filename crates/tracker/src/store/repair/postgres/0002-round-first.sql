-- 0002 as of db518fe -> 76f3081: the series keyed by the round first (columns in that order),
-- without their `at` indexes; `server_latest`; `sessions_left` partial. The tables are
-- rebuilt with the statements of the current 0002, rows kept.
ALTER TABLE series RENAME TO series_old;
ALTER TABLE series_old RENAME CONSTRAINT series_pkey TO series_old_pkey;
CREATE TABLE series (
    at BIGINT NOT NULL,               -- the round
    server_id BIGINT NOT NULL,
    status BIGINT NOT NULL,           -- 0 online, 1 timeout, 2 down, 3 error
    players BIGINT,                   -- when online: players (bots included)
    bots BIGINT,                      -- bots, where known
    rtt BIGINT,                       -- round-trip time in tenths of a millisecond
    PRIMARY KEY (at, server_id)
);
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
WITH (fillfactor = 70);
INSERT INTO server_latest (server_id, at, status, players, bots, rtt)
SELECT x.server_id, x.at, x.status, x.players, x.bots, x.rtt FROM series x
JOIN (SELECT server_id, MAX(at) AS at FROM series GROUP BY server_id) m
    ON m.server_id = x.server_id AND m.at = x.at;

ALTER TABLE series_agg RENAME TO series_agg_old;
ALTER TABLE series_agg_old RENAME CONSTRAINT series_agg_pkey TO series_agg_old_pkey;
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
);
INSERT INTO series_agg (at, server_id, rounds, online, players_min, players_avg, players_max,
    bots_avg, rtt_avg)
SELECT at, server_id, rounds, online, players_min, players_avg, players_max, bots_avg, rtt_avg
FROM series_agg_old ORDER BY at, server_id;
DROP TABLE series_agg_old;

DROP INDEX sessions_left;
CREATE INDEX sessions_left ON sessions (left_at) WHERE left_at IS NOT NULL;
