-- 0002 as of 064cbc8 -> db518fe: the writer's hash of each server's record.
ALTER TABLE servers ADD COLUMN record_hash BIGINT;
