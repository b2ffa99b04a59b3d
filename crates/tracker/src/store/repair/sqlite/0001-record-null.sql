-- 0001 as of fe2dce7 -> a8fa7cd: a snapshot's record may be NULL (snapshot_records = false).
ALTER TABLE snapshots RENAME TO snapshots_old;
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
INSERT INTO snapshots (addr, at, status, num_players, max_players, rtt_ms, map, record)
SELECT addr, at, status, num_players, max_players, rtt_ms, map, record FROM snapshots_old;
DROP TABLE snapshots_old;
CREATE INDEX snapshots_at ON snapshots (at);
