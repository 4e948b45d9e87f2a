-- Roles a tenant's administrator defines beside `viewer` and `editor`: per object, what a member may
-- do (read, create, update, delete), which rows (all, or those they own) and which fields they may
-- not see or not change. `objects` is the role's rules as JSON (an array, one entry per object).
-- A role's name is unique in its tenant (ids are in the tenant's block of 2^36).
CREATE TABLE roles (
  id         INTEGER PRIMARY KEY CHECK (id >= 1),
  name       TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  objects    TEXT    NOT NULL CHECK (json_valid(objects) AND json_type(objects) = 'array'),
  created_at INTEGER NOT NULL CHECK (created_at >= 0),
  updated_at INTEGER NOT NULL CHECK (updated_at >= 0)
) STRICT;
CREATE UNIQUE INDEX roles_by_name ON roles (id / 68719476736, name);

-- A membership under a role: `role_id` names it, and `role` stays 'viewer' (the least a role can be).
ALTER TABLE memberships ADD COLUMN role_id INTEGER REFERENCES roles (id);
CREATE INDEX memberships_by_role ON memberships (role_id) WHERE role_id IS NOT NULL;

-- A tenant's roles move with it, as its other rows do.
CREATE TRIGGER roles_moving_insert AFTER INSERT ON roles
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'roles',
    json_array(NEW.id));
END;
CREATE TRIGGER roles_moving_update AFTER UPDATE ON roles
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'roles', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER roles_moving_delete AFTER DELETE ON roles
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'roles',
    json_array(OLD.id));
END;
