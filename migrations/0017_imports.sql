-- Imports: a file of rows kept in R2, applied in the background in chunks. Each chunk is one D1
-- transaction that also moves the import's position (bytes of the file applied) and its counts,
-- guarded by the position it started from: a chunk applied once cannot apply again, and a
-- cancelled import takes no more chunks.
CREATE TABLE imports (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id         INTEGER NOT NULL,
  workspace_id    INTEGER NOT NULL,
  object_id       INTEGER NOT NULL,
  mode            TEXT    NOT NULL CHECK (mode IN ('create', 'upsert')),
  match_on        TEXT,
  format          TEXT    NOT NULL CHECK (format IN ('ndjson', 'csv')),
  file            TEXT    NOT NULL,
  size            INTEGER NOT NULL CHECK (size >= 0),
  columns         TEXT    CHECK (columns IS NULL OR json_valid(columns)),
  status          TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'cancelled', 'failed')),
  position        INTEGER NOT NULL CHECK (position >= 0),
  processed       INTEGER NOT NULL DEFAULT 0,
  created         INTEGER NOT NULL DEFAULT 0,
  updated         INTEGER NOT NULL DEFAULT 0,
  unchanged       INTEGER NOT NULL DEFAULT 0,
  failed          INTEGER NOT NULL DEFAULT 0,
  created_at      INTEGER NOT NULL,
  finished_at     INTEGER,
  -- Why an import failed, in words for its importer.
  failure         TEXT,
  -- A keyed request: the same key and request answer this import again.
  idempotency_key TEXT,
  request_hash    TEXT,
  UNIQUE (user_id, idempotency_key)
) STRICT;

-- The rows an import skipped, by their 1-based number among the file's data rows.
CREATE TABLE import_errors (
  import_id INTEGER NOT NULL REFERENCES imports (id),
  row       INTEGER NOT NULL,
  errors    TEXT    NOT NULL CHECK (json_valid(errors)),
  PRIMARY KEY (import_id, row)
) STRICT, WITHOUT ROWID;
