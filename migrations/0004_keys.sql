-- API keys get an id (to list and revoke them) and a prefix (to recognise them in a list
-- without showing them). Only a hash of a key was ever stored, so the prefix of a key issued
-- before this migration is unknown: those keys keep working and list with the prefix 'rk_'
-- (what every key starts with). Ids are handed out in the order keys were created and never
-- reused (AUTOINCREMENT), so a revoked key's id never names another key.
CREATE TABLE api_keys_with_ids (
  id         INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id >= 1),
  key_hash   TEXT    NOT NULL UNIQUE CHECK (length(key_hash) = 64),
  prefix     TEXT    NOT NULL CHECK (length(prefix) BETWEEN 1 AND 16),
  user_id    INTEGER NOT NULL REFERENCES users (id),
  created_at INTEGER NOT NULL CHECK (created_at >= 0)
) STRICT;

INSERT INTO api_keys_with_ids (key_hash, prefix, user_id, created_at)
  SELECT key_hash, 'rk_', user_id, created_at FROM api_keys ORDER BY created_at, key_hash;

DROP TABLE api_keys;
ALTER TABLE api_keys_with_ids RENAME TO api_keys;
-- The admin API lists a user's keys.
CREATE INDEX api_keys_by_user ON api_keys (user_id, id);
