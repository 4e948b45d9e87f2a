-- Users and workspaces never hand out an id twice. Without AUTOINCREMENT, deleting the user or
-- workspace with the highest id let the next one created take that id again, and with it
-- everything that still names the old one by number (a record's `createdBy`, `updatedBy` and
-- `ownedBy`, an old version of a definition). AUTOINCREMENT keeps the highest id ever used in
-- `sqlite_sequence`, so a new id is always above every id handed out before.
-- The tables are rebuilt: their rows, ids and checks stay as they were. `api_keys`,
-- `memberships` and `record_workspaces` reference them by name; the references are checked
-- once the migration commits, when the rebuilt tables hold every row again.
PRAGMA defer_foreign_keys = true;

CREATE TABLE users_v2 (
  id         INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id >= 0),
  name       TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at INTEGER NOT NULL CHECK (created_at >= 0)
) STRICT;
INSERT INTO users_v2 (id, name, created_at) SELECT id, name, created_at FROM users ORDER BY id;
DROP TABLE users;
ALTER TABLE users_v2 RENAME TO users;

CREATE TABLE workspaces_v2 (
  id         INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id >= 0),
  name       TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at INTEGER NOT NULL CHECK (created_at >= 0)
) STRICT;
INSERT INTO workspaces_v2 (id, name, created_at) SELECT id, name, created_at FROM workspaces ORDER BY id;
DROP TABLE workspaces;
ALTER TABLE workspaces_v2 RENAME TO workspaces;
