-- One write ledger, and a change log of diffs.

-- 1. The ledger. Every write (a patch, a group of patches, a batch, a create, a delete or restore,
-- an admin write) has an id, and the D1 batch that finishes it starts by inserting that id here,
-- with its outcome: what it committed (`{"r":[[recordId, version], ...]}`, `{"a": <answer>}`)
-- or the failure it was answered (`{"f": <status>}`). An id is finished once: any later attempt
-- (a retry whose first reply was lost, a resend, a re-run after an object restarted, a twin
-- object) fails on this primary key before it changes anything, and learns the outcome by
-- reading the row. Ids start with their time (base 36, fixed width), so pruning walks the key.
CREATE TABLE writes (
  id      TEXT NOT NULL PRIMARY KEY,
  outcome TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- 2. Changes hold what changed, not a copy of the record. `data` is the record's JSON for
-- `created`; for the other types a diff (see src/domain/change.ts): the fields that changed with
-- their new and previous values, the name when it changed, the previous update stamp. Undoing
-- diffs from the record's current state rebuilds any kept version exactly, which is how a write
-- settled by its ledger row answers the state it committed. The write id moves to the ledger.
-- Rows written before this migration keep their whole record, as `{"record": …}`.
-- `seq` is the rowid, not AUTOINCREMENT (which costs every insert a row of sqlite_sequence): a
-- rowid is max + 1, and pruning never removes the newest change, so no number comes back.
CREATE TABLE changes_v2 (
  seq       INTEGER PRIMARY KEY,
  record_id INTEGER NOT NULL CHECK (record_id >= 0),
  version   INTEGER NOT NULL CHECK (version >= 1),
  type      TEXT    NOT NULL CHECK (type IN ('created', 'updated', 'deleted', 'restored')),
  at        INTEGER NOT NULL CHECK (at >= 0),
  by        INTEGER NOT NULL CHECK (by >= 0),
  data      TEXT    NOT NULL
) STRICT;

INSERT INTO changes_v2 (seq, record_id, version, type, at, by, data)
  SELECT seq, record_id, version, type, at, by,
    CASE type WHEN 'created' THEN record ELSE json_object('record', json(record)) END
  FROM changes ORDER BY seq;
-- No number the old table used may come back (a feed cursor past it would skip the change):
-- when every kept change is older than the highest number used so far (pruned ones), a
-- placeholder (record 0, which no record is: ids start at 1) holds that number until newer
-- changes let pruning take it.
INSERT INTO changes_v2 (seq, record_id, version, type, at, by, data)
  SELECT n, 0, 1, 'created', 0, 0, 'null'
  FROM (SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0),
                   coalesce((SELECT seq FROM feed_horizon WHERE id = 1), 0)) AS n)
  WHERE n > coalesce((SELECT max(seq) FROM changes_v2), 0);

DROP TABLE changes;
ALTER TABLE changes_v2 RENAME TO changes;
-- A record's changes by version: undoing them, and nothing else (the feed walks `seq`, and
-- pruning walks `seq` too, so no index by age or by write is kept: each costs a row per change).
CREATE INDEX changes_by_record ON changes (record_id, version);

-- 3. An Idempotency-Key's answer is its write's ledger row, rebuilt when replayed: the key keeps
-- the status, the headers and the shape of the body, never a copy of the records. Keys completed
-- before this migration keep their stored body. The table is its primary key (WITHOUT ROWID) and
-- has no index by age: each would cost every keyed write a row; pruning scans instead.
CREATE TABLE idempotency_keys_v2 (
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
  write_id    TEXT,
  shape       TEXT CHECK (shape IS NULL OR shape IN ('record', 'items', 'answer')),
  created_at  INTEGER NOT NULL,
  lease_until INTEGER NOT NULL,
  PRIMARY KEY (user_id, key, method, path)
) STRICT, WITHOUT ROWID;
INSERT INTO idempotency_keys_v2 (user_id, method, path, key, fingerprint, token, state, status, headers, body,
    created_at, lease_until)
  SELECT user_id, method, path, key, fingerprint, token, state, status, headers, body, created_at, lease_until
  FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_v2 RENAME TO idempotency_keys;

-- 4. Indexes that cost every write a row and serve no walk: a list walks its workspace's records
-- in id order (record_workspaces_by_workspace) and tests object and update time on each.
DROP INDEX records_by_update;
DROP INDEX records_by_object;
