-- Exactly once.

-- 1. A batch guards the records it answers without changing them: `SET version = CASE version
-- WHEN <read> THEN version END`. Such an update keeps the version, so it is allowed only when it
-- changes nothing else; a stale one still yields NULL and aborts the whole D1 batch.
DROP TRIGGER records_version_must_increase;
CREATE TRIGGER records_version_must_increase BEFORE UPDATE ON records
WHEN NEW.version IS NULL OR NEW.version < OLD.version OR (NEW.version = OLD.version AND (
  NEW.name IS NOT OLD.name OR NEW.field_values IS NOT OLD.field_values OR NEW.deleted IS NOT OLD.deleted
  OR NEW.owned_by IS NOT OLD.owned_by OR NEW.updated_at IS NOT OLD.updated_at OR NEW.updated_by IS NOT OLD.updated_by
  OR NEW.is_template IS NOT OLD.is_template OR NEW.object_id IS NOT OLD.object_id
  OR NEW.object_version IS NOT OLD.object_version OR NEW.creation_type IS NOT OLD.creation_type
  OR NEW.created_at IS NOT OLD.created_at OR NEW.created_by IS NOT OLD.created_by))
BEGIN
  SELECT RAISE(ABORT, 'version_conflict');
END;

-- 2. Every committed change of a record, written in the same D1 batch as the change itself
-- (a transactional outbox). `seq` orders commits (D1 runs one transaction at a time, and
-- AUTOINCREMENT never hands out a number twice, even after old rows are pruned). `record` is
-- the record's JSON exactly as the write answered it. `write_id` names the write of this one
-- change: a patch's own call id, `<batch id>/<record id>` in a batch, `<create id>/<index>` in a
-- create. It is unique, and a write puts its change rows before anything else, so re-sending a
-- write that already committed fails on this index and changes nothing: that is how a writer
-- whose reply was lost learns that its first attempt went through (and never applies it twice).
CREATE TABLE changes (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  record_id INTEGER NOT NULL CHECK (record_id >= 0),
  version   INTEGER NOT NULL CHECK (version >= 1),
  type      TEXT    NOT NULL CHECK (type IN ('created', 'updated', 'deleted', 'restored')),
  at        INTEGER NOT NULL CHECK (at >= 0),
  by        INTEGER NOT NULL CHECK (by >= 0),
  write_id  TEXT    NOT NULL,
  record    TEXT    NOT NULL
) STRICT;
CREATE UNIQUE INDEX changes_by_write ON changes (write_id);
-- Not unique on purpose: a stale writer must fail on the record's version guard, not here.
CREATE INDEX changes_by_record ON changes (record_id, version);
CREATE INDEX changes_by_age ON changes (at);

-- 3. Idempotency-Key. A request that sends a key claims it (`running`, with a
-- token of its own and a lease); its write turns the claim into `done` with the answer, in the
-- same D1 batch. A request that fails gives its claim back. A claim whose holder vanished
-- (lease past) may be taken over.
CREATE TABLE idempotency_keys (
  user_id     INTEGER NOT NULL,
  method      TEXT    NOT NULL,
  path        TEXT    NOT NULL,
  key         TEXT    NOT NULL,
  fingerprint TEXT    NOT NULL,
  token       TEXT    NOT NULL,
  state       TEXT    NOT NULL CHECK (state IN ('running', 'done')),
  status      INTEGER,
  headers     TEXT,
  body        TEXT,
  created_at  INTEGER NOT NULL,
  lease_until INTEGER NOT NULL,
  PRIMARY KEY (user_id, key, method, path)
) STRICT;
CREATE INDEX idempotency_by_age ON idempotency_keys (created_at);
