-- fragstat track schema, version 3: the live list tells the truth (issue 31).
--
-- servers.unlisted_since: since when no master lists the server and the configuration does
-- not name it (it is then still probed for `session_gap_secs` after it was last seen, so it
-- is seen going down); NULL while it is listed. A server neither listed nor online is not
-- in the live list. Servers written before this version count as unlisted until a round
-- finds them listed again.
ALTER TABLE servers ADD COLUMN unlisted_since BIGINT;
UPDATE servers SET unlisted_since = last_seen;

-- Every configured master's answer in the latest round (a master down is shown as such).
CREATE TABLE masters (
    game TEXT NOT NULL,               -- registry id asked for
    master TEXT NOT NULL,             -- the master as configured
    up BIGINT NOT NULL,               -- 1: it gave a list this round, 0: it did not
    listed BIGINT,                    -- servers it listed, when up
    dropped BIGINT NOT NULL,          -- of those, left out by the list filter and caps
    error TEXT,                       -- why it gave no list
    checked_at BIGINT NOT NULL,       -- the round
    up_since BIGINT,                  -- first round of its current answering run
    down_since BIGINT,                -- first round of its current silent run
    PRIMARY KEY (game, master)
);
