-- 0001 as of fe2dce7 -> a8fa7cd: a snapshot's record may be NULL (snapshot_records = false).
ALTER TABLE snapshots ALTER COLUMN record DROP NOT NULL;
