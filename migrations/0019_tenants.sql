-- Tenants, each on a database of its own (or sharing one with a few others). Every database of
-- the deployment has this same schema; the catalog of tenants is read from DB's.

-- 1. The catalog: each tenant and the database (a D1 binding's name) it lives on. The default
-- tenant (1), which holds everything made before tenants, has no row: it is on DB until a row
-- says otherwise. A deleted tenant keeps its row (status 'deleted'), so its id is never reused.
CREATE TABLE tenants (
  id         INTEGER PRIMARY KEY CHECK (id >= 1),
  name       TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  database   TEXT    NOT NULL CHECK (length(database) BETWEEN 1 AND 100),
  status     TEXT    NOT NULL CHECK (status IN ('active', 'moving', 'deleting', 'deleted')),
  created_at INTEGER NOT NULL CHECK (created_at >= 0)
) STRICT;

-- 2. Ids. A tenant's ids lie in a block of its own (2^36 of them, from (tenant - 1) * 2^36), the
-- same in every table, so an id is unique across every tenant and database. Records and changes
-- are never deleted: theirs are the highest in the block plus one. Users, workspaces, keys,
-- objects, webhooks and imports take the next of `last` here, which never goes down, so an id
-- once handed out (a user deleted since, say) is never handed out again.
CREATE TABLE sequences (
  name   TEXT    NOT NULL,
  tenant INTEGER NOT NULL CHECK (tenant >= 1),
  last   INTEGER NOT NULL CHECK (last >= 0),
  PRIMARY KEY (name, tenant)
) STRICT, WITHOUT ROWID;

INSERT INTO sequences (name, tenant, last)
  SELECT 'users', 1, max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'users'), 0),
    coalesce((SELECT max(id) FROM users), 0));
INSERT INTO sequences (name, tenant, last)
  SELECT 'workspaces', 1, max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'workspaces'), 0),
    coalesce((SELECT max(id) FROM workspaces), 0));
INSERT INTO sequences (name, tenant, last)
  SELECT 'api_keys', 1, max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'api_keys'), 0),
    coalesce((SELECT max(id) FROM api_keys), 0));
INSERT INTO sequences (name, tenant, last)
  SELECT 'objects', 1, max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'objects'), 0),
    coalesce((SELECT max(id) FROM objects), 0));
INSERT INTO sequences (name, tenant, last)
  SELECT 'webhooks', 1, max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'webhooks'), 0),
    coalesce((SELECT max(id) FROM webhooks), 0));
INSERT INTO sequences (name, tenant, last)
  SELECT 'imports', 1, max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'imports'), 0),
    coalesce((SELECT max(id) FROM imports), 0));

-- 3. Tenants that left this database (deleted, or moved to another). A write's id names its tenant
-- (`<time>-t<tenant>-…`; an id without one is the default tenant's), and no write of a tenant that
-- left is finished here: an isolate that still routes the tenant here is refused before it writes.
CREATE TABLE departures (
  tenant_id INTEGER PRIMARY KEY CHECK (tenant_id >= 1),
  state     TEXT    NOT NULL CHECK (state IN ('switching', 'moved', 'deleted'))
) STRICT;

CREATE TRIGGER writes_of_tenants_here BEFORE INSERT ON writes
WHEN EXISTS (SELECT 1 FROM departures WHERE tenant_id = CASE WHEN substr(NEW.id, 10, 2) = '-t'
  THEN CAST(substr(NEW.id, 12, instr(substr(NEW.id, 12), '-') - 1) AS INTEGER) ELSE 1 END)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here');
END;

-- 4. How far each tenant's feed was pruned: a cursor older than that is gone (410). Numbers of
-- each tenant lie in its block, so each has a horizon of its own.
CREATE TABLE feed_horizons (
  tenant INTEGER PRIMARY KEY CHECK (tenant >= 1),
  seq    INTEGER NOT NULL CHECK (seq >= 0)
) STRICT;
INSERT INTO feed_horizons (tenant, seq) SELECT 1, seq FROM feed_horizon WHERE id = 1;

-- 5. A tenant's administrators call its admin API with their own keys.
ALTER TABLE users ADD COLUMN admin INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1));
