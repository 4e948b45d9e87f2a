-- Users, their API keys (only a SHA-256 hash is kept), workspaces and memberships.
CREATE TABLE users (
  id         INTEGER PRIMARY KEY CHECK (id >= 0),
  name       TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at INTEGER NOT NULL CHECK (created_at >= 0)
) STRICT;

CREATE TABLE api_keys (
  key_hash   TEXT    PRIMARY KEY CHECK (length(key_hash) = 64),
  user_id    INTEGER NOT NULL REFERENCES users (id),
  created_at INTEGER NOT NULL CHECK (created_at >= 0)
) STRICT, WITHOUT ROWID;

CREATE TABLE workspaces (
  id         INTEGER PRIMARY KEY CHECK (id >= 0),
  name       TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at INTEGER NOT NULL CHECK (created_at >= 0)
) STRICT;

CREATE TABLE memberships (
  workspace_id INTEGER NOT NULL REFERENCES workspaces (id),
  user_id      INTEGER NOT NULL REFERENCES users (id),
  role         TEXT    NOT NULL CHECK (role IN ('editor', 'viewer')),
  PRIMARY KEY (workspace_id, user_id)
) STRICT, WITHOUT ROWID;
-- Every request resolves the caller's memberships by user.
CREATE INDEX memberships_by_user ON memberships (user_id, workspace_id, role);

-- Object definitions: `objects` points at the current version; every version is kept.
CREATE TABLE objects (
  id              INTEGER PRIMARY KEY CHECK (id >= 0),
  current_version INTEGER NOT NULL CHECK (current_version >= 1)
) STRICT;

CREATE TABLE object_versions (
  object_id     INTEGER NOT NULL REFERENCES objects (id),
  version       INTEGER NOT NULL CHECK (version >= 1),
  name          TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  name_template TEXT    CHECK (name_template IS NULL OR length(name_template) <= 10000),
  fields        TEXT    NOT NULL CHECK (json_valid(fields) AND json_type(fields) = 'array'),
  workspace_ids TEXT    NOT NULL CHECK (json_valid(workspace_ids) AND json_type(workspace_ids) = 'array'),
  created_at    INTEGER NOT NULL CHECK (created_at >= 0),
  PRIMARY KEY (object_id, version)
) STRICT, WITHOUT ROWID;

-- Records. `id` is never reused: rows are never deleted (see the trigger below), so
-- max(id) + 1 is always fresh. `field_values` is the response array, in definition order.
CREATE TABLE records (
  id             INTEGER PRIMARY KEY CHECK (id >= 0),
  object_id      INTEGER NOT NULL CHECK (object_id >= 0),
  object_version INTEGER NOT NULL CHECK (object_version >= 0),
  name           TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 10000),
  field_values   TEXT    NOT NULL CHECK (json_valid(field_values) AND json_type(field_values) = 'array'),
  creation_type  TEXT    NOT NULL CHECK (creation_type IN ('System', 'User')),
  version        INTEGER NOT NULL CHECK (version >= 0),
  deleted        INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
  owned_by       INTEGER CHECK (owned_by IS NULL OR owned_by >= 0),
  created_at     INTEGER NOT NULL CHECK (created_at >= 0),
  created_by     INTEGER NOT NULL CHECK (created_by >= 0),
  updated_at     INTEGER NOT NULL CHECK (updated_at >= 0),
  updated_by     INTEGER NOT NULL CHECK (updated_by >= 0),
  is_template    INTEGER NOT NULL DEFAULT 0 CHECK (is_template IN (0, 1)),
  FOREIGN KEY (object_id, object_version) REFERENCES object_versions (object_id, version)
) STRICT;

CREATE TRIGGER records_are_never_deleted BEFORE DELETE ON records
BEGIN
  SELECT RAISE(ABORT, 'records_are_never_deleted');
END;

-- The workspaces a record is shared with (`sharedWorkspaceIds`).
CREATE TABLE record_workspaces (
  record_id    INTEGER NOT NULL REFERENCES records (id),
  workspace_id INTEGER NOT NULL REFERENCES workspaces (id),
  PRIMARY KEY (record_id, workspace_id)
) STRICT, WITHOUT ROWID;
