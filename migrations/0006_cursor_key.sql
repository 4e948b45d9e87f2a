-- The key that signs list and feed cursors when no CURSOR_SECRET secret is set: random, made
-- once by whichever request needs it first (INSERT OR IGNORE, then read: concurrent first
-- requests all end with the one row), never derived from ADMIN_TOKEN or a fixed text.
CREATE TABLE cursor_key (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  secret TEXT    NOT NULL CHECK (length(secret) >= 32)
) STRICT;
