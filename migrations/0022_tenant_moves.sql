-- Moving a tenant to another database while it works: its rows are copied in bulk, what changes
-- meanwhile is caught up from a log of changed keys, then its writes are refused for the moment of
-- the switch, its route changes, and its rows leave the old database.

-- 1. Moves, in DB's catalog beside the tenants. `step` is where the mover stands (JSON), so a
-- restart resumes it; one move of a tenant runs at a time.
CREATE TABLE moves (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant_id   INTEGER NOT NULL CHECK (tenant_id >= 1),
  from_db     TEXT    NOT NULL,
  to_db       TEXT    NOT NULL,
  status      TEXT    NOT NULL CHECK (status IN ('copying', 'switching', 'succeeded', 'failed', 'cancelled')),
  rows_copied INTEGER NOT NULL DEFAULT 0 CHECK (rows_copied >= 0),
  started_at  INTEGER NOT NULL CHECK (started_at >= 0),
  finished_at INTEGER,
  failure     TEXT,
  step        TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(step)),
  -- The operator's Idempotency-Key: the same key and database answer this move again.
  idempotency_key TEXT,
  UNIQUE (tenant_id, idempotency_key)
) STRICT;
CREATE UNIQUE INDEX one_move_at_a_time ON moves (tenant_id) WHERE status IN ('copying', 'switching');

-- 2. On the database a tenant leaves: while `copying` holds it, every change of its rows logs the
-- row's key in `copy_log` (the mover reads the row again and copies what it finds), and once
-- `departures` says it is switching or moved, no row of it is written here (deletes still are:
-- the old database's rows go once the switch is done). `moved` stays, so a late writer is refused.
CREATE TABLE copying (
  tenant_id INTEGER PRIMARY KEY CHECK (tenant_id >= 1),
  state     TEXT    NOT NULL CHECK (state IN ('copying', 'moved'))
) STRICT;
CREATE TABLE copy_log (
  n         INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant_id INTEGER NOT NULL,
  tbl       TEXT    NOT NULL,
  key       TEXT    NOT NULL
) STRICT;
CREATE INDEX copy_log_by_tenant ON copy_log (tenant_id, n);

-- 3. On the database a tenant arrives at: its rows are copied as they are, derived rows included,
-- so no trigger derives anything from them or checks them again until it has arrived (the version
-- guard stays). A copy given up is removed, records included. `runner` is the step of the mover
-- that writes here now: each of its batches starts by checking it, so a second instance of the
-- mover (a twin, a step run again) never writes what it read before the other.
CREATE TABLE arrivals (
  tenant_id INTEGER PRIMARY KEY CHECK (tenant_id >= 1),
  runner    TEXT    NOT NULL
) STRICT;

DROP TRIGGER records_are_never_deleted;
CREATE TRIGGER records_are_never_deleted BEFORE DELETE ON records
WHEN NOT EXISTS (SELECT 1 FROM departures WHERE tenant_id = OLD.id / 68719476736 + 1 AND state IN ('deleted', 'moved'))
  AND NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = OLD.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'records_are_never_deleted');
END;

DROP TRIGGER reference_targets_on_version;
CREATE TRIGGER reference_targets_on_version AFTER INSERT ON object_versions
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.object_id / 68719476736 + 1)
  AND (NEW.version = (SELECT current_version FROM objects WHERE id = NEW.object_id))
BEGIN
  DELETE FROM reference_targets WHERE object_id = NEW.object_id;
  INSERT INTO reference_targets (target, object_id, field, on_delete)
  SELECT f.value ->> '$.target', NEW.object_id, f.value ->> '$.name', coalesce(f.value ->> '$.onDelete', 'restrict')
  FROM json_each(NEW.fields) f
  WHERE f.value ->> '$.type' = 'reference' AND f.value ->> '$.target' IS NOT NULL;
END;

DROP TRIGGER record_sort_on_index_delete;
CREATE TRIGGER record_sort_on_index_delete AFTER DELETE ON record_index
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = OLD.record_id / 68719476736 + 1)
  AND (OLD.value IS NOT NULL)
BEGIN
  DELETE FROM record_sort WHERE key = 'f:' || OLD.field AND value = OLD.value AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
END;

DROP TRIGGER record_sort_on_index_insert;
CREATE TRIGGER record_sort_on_index_insert AFTER INSERT ON record_index
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
  AND (NEW.value IS NOT NULL)
BEGIN
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT workspace_id, 'f:' || NEW.field, NEW.value, NEW.record_id FROM record_workspaces
  WHERE record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_sort_on_index_update;
CREATE TRIGGER record_sort_on_index_update AFTER UPDATE OF value ON record_index
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
  AND (NEW.value IS NOT OLD.value)
BEGIN
  DELETE FROM record_sort WHERE key = 'f:' || OLD.field AND value = OLD.value AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT workspace_id, 'f:' || NEW.field, NEW.value, NEW.record_id FROM record_workspaces
  WHERE record_id = NEW.record_id AND NEW.value IS NOT NULL
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_referrers_on_live;
CREATE TRIGGER record_referrers_on_live AFTER UPDATE OF live ON record_refs
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
  AND (NEW.live IS NOT OLD.live)
BEGIN
  DELETE FROM record_referrers WHERE NEW.live = 0 AND target_id = OLD.target_id AND object_id = OLD.object_id
    AND field = OLD.field AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
  INSERT INTO record_referrers (workspace_id, target_id, object_id, field, record_id)
  SELECT workspace_id, NEW.target_id, NEW.object_id, NEW.field, NEW.record_id FROM record_workspaces
  WHERE NEW.live = 1 AND record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_referrers_on_ref;
CREATE TRIGGER record_referrers_on_ref AFTER INSERT ON record_refs
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
  AND (NEW.live = 1)
BEGIN
  INSERT INTO record_referrers (workspace_id, target_id, object_id, field, record_id)
  SELECT workspace_id, NEW.target_id, NEW.object_id, NEW.field, NEW.record_id FROM record_workspaces
  WHERE record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_referrers_on_unref;
CREATE TRIGGER record_referrers_on_unref AFTER DELETE ON record_refs
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = OLD.record_id / 68719476736 + 1)
  AND (OLD.live = 1)
BEGIN
  DELETE FROM record_referrers WHERE target_id = OLD.target_id AND object_id = OLD.object_id AND field = OLD.field
    AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
END;

DROP TRIGGER record_refs_sort_on_delete;
CREATE TRIGGER record_refs_sort_on_delete AFTER DELETE ON record_refs
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = OLD.record_id / 68719476736 + 1)
BEGIN
  DELETE FROM record_sort WHERE key = 'f:' || OLD.field AND value = OLD.target_id AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
END;

DROP TRIGGER record_refs_sort_on_insert;
CREATE TRIGGER record_refs_sort_on_insert AFTER INSERT ON record_refs
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT workspace_id, 'f:' || NEW.field, NEW.target_id, NEW.record_id FROM record_workspaces
  WHERE record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_keys_on_share;
CREATE TRIGGER record_keys_on_share AFTER INSERT ON record_workspaces
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT NEW.workspace_id, k.key, k.value, NEW.record_id FROM (
    SELECT 'c' AS key, created_at AS value FROM records WHERE id = NEW.record_id
    UNION ALL SELECT 'u', updated_at FROM records WHERE id = NEW.record_id
    UNION ALL SELECT 'n', name FROM records WHERE id = NEW.record_id
    UNION ALL SELECT 'f:' || field, value FROM record_index WHERE record_id = NEW.record_id AND value IS NOT NULL) k
  WHERE true
  ON CONFLICT DO NOTHING;
  INSERT INTO name_terms (workspace_id, term, record_id)
  SELECT NEW.workspace_id, t.value, NEW.record_id FROM records r, json_each(r.terms) t
  WHERE r.id = NEW.record_id AND r.deleted = 0
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_keys_on_unshare;
CREATE TRIGGER record_keys_on_unshare AFTER DELETE ON record_workspaces
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = OLD.record_id / 68719476736 + 1)
BEGIN
  DELETE FROM record_sort WHERE workspace_id = OLD.workspace_id AND record_id = OLD.record_id;
  DELETE FROM name_terms WHERE workspace_id = OLD.workspace_id AND record_id = OLD.record_id;
END;

DROP TRIGGER record_referrers_on_share;
CREATE TRIGGER record_referrers_on_share AFTER INSERT ON record_workspaces
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  INSERT INTO record_referrers (workspace_id, target_id, object_id, field, record_id)
  SELECT NEW.workspace_id, target_id, object_id, field, record_id FROM record_refs
  WHERE record_id = NEW.record_id AND live = 1
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_referrers_on_unshare;
CREATE TRIGGER record_referrers_on_unshare AFTER DELETE ON record_workspaces
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = OLD.record_id / 68719476736 + 1)
BEGIN
  DELETE FROM record_referrers WHERE workspace_id = OLD.workspace_id
    AND (target_id, object_id, field, record_id) IN (SELECT target_id, object_id, field, record_id FROM record_refs
      WHERE record_id = OLD.record_id);
END;

DROP TRIGGER record_refs_on_share;
CREATE TRIGGER record_refs_on_share AFTER INSERT ON record_workspaces
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT NEW.workspace_id, 'f:' || field, target_id, NEW.record_id FROM record_refs WHERE record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER name_terms_on_delete;
CREATE TRIGGER name_terms_on_delete AFTER UPDATE OF deleted ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.deleted = 1 AND OLD.deleted = 0)
BEGIN
  DELETE FROM name_terms WHERE (workspace_id, term, record_id) IN (
    SELECT w.workspace_id, t.value, NEW.id FROM record_workspaces w,
      (SELECT value FROM json_each(coalesce(OLD.terms, '[]'))
        UNION SELECT value FROM json_each(coalesce(NEW.terms, '[]'))) t
    WHERE w.record_id = NEW.id);
END;

DROP TRIGGER name_terms_on_restore;
CREATE TRIGGER name_terms_on_restore AFTER UPDATE OF deleted ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.deleted = 0 AND OLD.deleted = 1)
BEGIN
  INSERT INTO name_terms (workspace_id, term, record_id)
  SELECT w.workspace_id, t.value, NEW.id FROM record_workspaces w, json_each(coalesce(NEW.terms, '[]')) t
  WHERE w.record_id = NEW.id
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER name_terms_on_update;
CREATE TRIGGER name_terms_on_update AFTER UPDATE OF terms ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.terms IS NOT OLD.terms)
BEGIN
  DELETE FROM name_terms WHERE record_id = NEW.id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = NEW.id)
    AND term IN (SELECT value FROM json_each(coalesce(OLD.terms, '[]'))
      EXCEPT SELECT value FROM json_each(coalesce(NEW.terms, '[]')));
  INSERT INTO name_terms (workspace_id, term, record_id)
  SELECT w.workspace_id, t.term, NEW.id FROM record_workspaces w, (SELECT value AS term
      FROM json_each(coalesce(NEW.terms, '[]')) EXCEPT SELECT value FROM json_each(coalesce(OLD.terms, '[]'))) t
  WHERE w.record_id = NEW.id AND NEW.deleted = 0
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_index_on_insert;
CREATE TRIGGER record_index_on_insert AFTER INSERT ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  INSERT INTO record_index (record_id, field, object_id, value, unique_key)
  SELECT NEW.id, name, NEW.object_id, value, CASE WHEN is_unique AND NOT NEW.deleted
      THEN CASE WHEN type IN ('text', 'email') THEN coalesce(NEW.folds ->> ('$.' || name), lower(value))
        ELSE value END END
  FROM (SELECT f.name, f.type, f.is_unique, CASE f.type WHEN 'datetime' THEN CAST(round(1000 * coalesce(
        unixepoch(upper(e.value ->> '$.value'), 'subsec'),
        unixepoch(upper(substr(e.value ->> '$.value', 1, 17) || '59' || substr(e.value ->> '$.value', 20)),
          'subsec') + 1
      )) AS INTEGER) ELSE e.value ->> '$.value' END AS value
    FROM index_fields f JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name
    WHERE f.object_id = NEW.object_id)
  WHERE true;
END;

DROP TRIGGER record_index_on_update;
CREATE TRIGGER record_index_on_update AFTER UPDATE OF field_values, deleted ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.field_values IS NOT OLD.field_values OR NEW.deleted IS NOT OLD.deleted)
BEGIN
  DELETE FROM record_index WHERE record_id = NEW.id AND field IN (
    SELECT o.value ->> '$.fieldName' FROM json_each(OLD.field_values) o
    WHERE NOT EXISTS (SELECT 1 FROM json_each(NEW.field_values) n
      WHERE n.value ->> '$.fieldName' = o.value ->> '$.fieldName'));
  INSERT INTO record_index (record_id, field, object_id, value, unique_key)
  SELECT NEW.id, name, NEW.object_id, value, CASE WHEN is_unique AND NOT NEW.deleted
      THEN CASE WHEN type IN ('text', 'email') THEN coalesce(NEW.folds ->> ('$.' || name), lower(value))
        ELSE value END END
  FROM (SELECT f.name, f.type, f.is_unique, CASE f.type WHEN 'datetime' THEN CAST(round(1000 * coalesce(
        unixepoch(upper(e.value ->> '$.value'), 'subsec'),
        unixepoch(upper(substr(e.value ->> '$.value', 1, 17) || '59' || substr(e.value ->> '$.value', 20)),
          'subsec') + 1
      )) AS INTEGER) ELSE e.value ->> '$.value' END AS value
    FROM index_fields f JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name
    WHERE f.object_id = NEW.object_id AND (NEW.deleted IS NOT OLD.deleted OR NOT EXISTS (
      SELECT 1 FROM json_each(OLD.field_values) o
      WHERE o.value ->> '$.fieldName' = f.name AND o.value -> '$.value' IS e.value -> '$.value')))
  WHERE true
  ON CONFLICT (record_id, field) DO UPDATE SET value = excluded.value, unique_key = excluded.unique_key;
END;

DROP TRIGGER record_refs_live;
CREATE TRIGGER record_refs_live AFTER UPDATE OF deleted ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.deleted IS NOT OLD.deleted)
BEGIN
  UPDATE record_refs SET live = 1 - NEW.deleted WHERE record_id = NEW.id;
END;

DROP TRIGGER record_refs_on_delete;
CREATE TRIGGER record_refs_on_delete BEFORE UPDATE OF deleted ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.deleted = 1 AND OLD.deleted = 0 AND NEW.version > OLD.version)
BEGIN
  SELECT RAISE(ABORT, 'record_referenced') WHERE EXISTS (SELECT 1 FROM reference_targets t
    CROSS JOIN record_refs r ON r.target_id = NEW.id AND r.live = 1 AND r.object_id = t.object_id AND r.field = t.field
    WHERE t.target = NEW.object_id AND t.on_delete = 'restrict' AND r.record_id <> NEW.id);
END;

DROP TRIGGER record_refs_on_insert;
CREATE TRIGGER record_refs_on_insert AFTER INSERT ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (EXISTS (SELECT 1 FROM reference_fields WHERE object_id = NEW.object_id))
BEGIN
  SELECT RAISE(ABORT, 'invalid_reference') FROM reference_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
  WHERE f.object_id = NEW.object_id AND NOT EXISTS (SELECT 1 FROM records x
    WHERE x.id = t.value AND x.object_id = f.target AND x.deleted = 0 AND EXISTS (SELECT 1 FROM record_workspaces w
      JOIN memberships m ON m.workspace_id = w.workspace_id AND m.user_id = NEW.updated_by WHERE w.record_id = x.id));
  INSERT INTO record_refs (record_id, field, target_id, object_id)
  SELECT NEW.id, f.name, t.value, NEW.object_id FROM reference_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
  WHERE f.object_id = NEW.object_id
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_refs_on_restore;
CREATE TRIGGER record_refs_on_restore BEFORE UPDATE OF deleted ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.deleted = 0 AND OLD.deleted = 1 AND NEW.version > OLD.version)
BEGIN
  SELECT RAISE(ABORT, 'invalid_reference') WHERE EXISTS (SELECT 1 FROM record_refs r
    JOIN reference_fields f ON f.object_id = r.object_id AND f.name = r.field AND f.on_delete = 'restrict'
    JOIN records x ON x.id = r.target_id AND x.deleted = 1 AND x.id <> NEW.id
    WHERE r.record_id = NEW.id);
END;

DROP TRIGGER record_refs_on_update;
CREATE TRIGGER record_refs_on_update AFTER UPDATE OF field_values ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.field_values IS NOT OLD.field_values
  AND EXISTS (SELECT 1 FROM reference_fields WHERE object_id = NEW.object_id))
BEGIN
  SELECT RAISE(ABORT, 'invalid_reference') FROM reference_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
  WHERE f.object_id = NEW.object_id
    AND NOT EXISTS (SELECT 1 FROM record_refs r
      WHERE r.record_id = NEW.id AND r.field = f.name AND r.target_id = t.value)
    AND NOT EXISTS (SELECT 1 FROM records x
      WHERE x.id = t.value AND x.object_id = f.target AND x.deleted = 0 AND EXISTS (SELECT 1 FROM record_workspaces w
        JOIN memberships m ON m.workspace_id = w.workspace_id AND m.user_id = NEW.updated_by WHERE w.record_id = x.id));
  DELETE FROM record_refs WHERE record_id = NEW.id AND (field, target_id) NOT IN (
    SELECT f.name, t.value FROM reference_fields f
      JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
    WHERE f.object_id = NEW.object_id);
  INSERT INTO record_refs (record_id, field, target_id, object_id)
  SELECT NEW.id, f.name, t.value, NEW.object_id FROM reference_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
  WHERE f.object_id = NEW.object_id
  ON CONFLICT DO NOTHING;
END;

DROP TRIGGER record_sort_on_update;
CREATE TRIGGER record_sort_on_update AFTER UPDATE OF updated_at, name ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.updated_at IS NOT OLD.updated_at OR NEW.name IS NOT OLD.name)
BEGIN
  UPDATE record_sort SET value = NEW.updated_at
  WHERE NEW.updated_at IS NOT OLD.updated_at AND key = 'u' AND value = OLD.updated_at AND record_id = NEW.id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = NEW.id);
  UPDATE record_sort SET value = NEW.name
  WHERE NEW.name IS NOT OLD.name AND key = 'n' AND value = OLD.name AND record_id = NEW.id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = NEW.id);
END;

-- 4. Every table a tenant owns logs its changes while the tenant is copied away, and refuses its
-- writes once it is switching or moved.
CREATE TRIGGER objects_moving_insert AFTER INSERT ON objects
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'objects',
    json_array(NEW.id));
END;
CREATE TRIGGER objects_moving_update AFTER UPDATE ON objects
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'objects', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER objects_moving_delete AFTER DELETE ON objects
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'objects',
    json_array(OLD.id));
END;

CREATE TRIGGER object_versions_moving_insert AFTER INSERT ON object_versions
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.object_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.object_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.object_id / 68719476736 + 1, 'object_versions',
    json_array(NEW.object_id, NEW.version));
END;
CREATE TRIGGER object_versions_moving_update AFTER UPDATE ON object_versions
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.object_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.object_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.object_id / 68719476736 + 1, 'object_versions', k FROM (
    SELECT json_array(OLD.object_id, OLD.version) AS k
    UNION SELECT json_array(NEW.object_id, NEW.version));
END;
CREATE TRIGGER object_versions_moving_delete AFTER DELETE ON object_versions
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.object_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.object_id / 68719476736 + 1, 'object_versions',
    json_array(OLD.object_id, OLD.version));
END;

CREATE TRIGGER reference_targets_moving_insert AFTER INSERT ON reference_targets
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.object_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.object_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.object_id / 68719476736 + 1, 'reference_targets',
    json_array(NEW.target, NEW.object_id, NEW.field));
END;
CREATE TRIGGER reference_targets_moving_update AFTER UPDATE ON reference_targets
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.object_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.object_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.object_id / 68719476736 + 1, 'reference_targets', k FROM (
    SELECT json_array(OLD.target, OLD.object_id, OLD.field) AS k
    UNION SELECT json_array(NEW.target, NEW.object_id, NEW.field));
END;
CREATE TRIGGER reference_targets_moving_delete AFTER DELETE ON reference_targets
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.object_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.object_id / 68719476736 + 1, 'reference_targets',
    json_array(OLD.target, OLD.object_id, OLD.field));
END;

CREATE TRIGGER index_builds_moving_insert AFTER INSERT ON index_builds
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.object_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.object_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.object_id / 68719476736 + 1, 'index_builds',
    json_array(NEW.object_id, NEW.field));
END;
CREATE TRIGGER index_builds_moving_update AFTER UPDATE ON index_builds
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.object_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.object_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.object_id / 68719476736 + 1, 'index_builds', k FROM (
    SELECT json_array(OLD.object_id, OLD.field) AS k
    UNION SELECT json_array(NEW.object_id, NEW.field));
END;
CREATE TRIGGER index_builds_moving_delete AFTER DELETE ON index_builds
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.object_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.object_id / 68719476736 + 1, 'index_builds',
    json_array(OLD.object_id, OLD.field));
END;

CREATE TRIGGER workspaces_moving_insert AFTER INSERT ON workspaces
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'workspaces',
    json_array(NEW.id));
END;
CREATE TRIGGER workspaces_moving_update AFTER UPDATE ON workspaces
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'workspaces', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER workspaces_moving_delete AFTER DELETE ON workspaces
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'workspaces',
    json_array(OLD.id));
END;

CREATE TRIGGER users_moving_insert AFTER INSERT ON users
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'users',
    json_array(NEW.id));
END;
CREATE TRIGGER users_moving_update AFTER UPDATE ON users
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'users', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER users_moving_delete AFTER DELETE ON users
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'users',
    json_array(OLD.id));
END;

CREATE TRIGGER idempotency_keys_moving_insert AFTER INSERT ON idempotency_keys
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.user_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.user_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.user_id / 68719476736 + 1, 'idempotency_keys',
    json_array(NEW.user_id, NEW.key, NEW.method, NEW.path));
END;
CREATE TRIGGER idempotency_keys_moving_update AFTER UPDATE ON idempotency_keys
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.user_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.user_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.user_id / 68719476736 + 1, 'idempotency_keys', k FROM (
    SELECT json_array(OLD.user_id, OLD.key, OLD.method, OLD.path) AS k
    UNION SELECT json_array(NEW.user_id, NEW.key, NEW.method, NEW.path));
END;
CREATE TRIGGER idempotency_keys_moving_delete AFTER DELETE ON idempotency_keys
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.user_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.user_id / 68719476736 + 1, 'idempotency_keys',
    json_array(OLD.user_id, OLD.key, OLD.method, OLD.path));
END;

CREATE TRIGGER api_keys_moving_insert AFTER INSERT ON api_keys
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'api_keys',
    json_array(NEW.id));
END;
CREATE TRIGGER api_keys_moving_update AFTER UPDATE ON api_keys
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'api_keys', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER api_keys_moving_delete AFTER DELETE ON api_keys
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'api_keys',
    json_array(OLD.id));
END;

CREATE TRIGGER memberships_moving_insert AFTER INSERT ON memberships
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.workspace_id / 68719476736 + 1, 'memberships',
    json_array(NEW.workspace_id, NEW.user_id));
END;
CREATE TRIGGER memberships_moving_update AFTER UPDATE ON memberships
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.workspace_id / 68719476736 + 1, 'memberships', k FROM (
    SELECT json_array(OLD.workspace_id, OLD.user_id) AS k
    UNION SELECT json_array(NEW.workspace_id, NEW.user_id));
END;
CREATE TRIGGER memberships_moving_delete AFTER DELETE ON memberships
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.workspace_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.workspace_id / 68719476736 + 1, 'memberships',
    json_array(OLD.workspace_id, OLD.user_id));
END;

CREATE TRIGGER records_moving_insert AFTER INSERT ON records
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'records',
    json_array(NEW.id));
END;
CREATE TRIGGER records_moving_update AFTER UPDATE ON records
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'records', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER records_moving_delete AFTER DELETE ON records
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'records',
    json_array(OLD.id));
END;

CREATE TRIGGER changes_moving_insert AFTER INSERT ON changes
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.seq / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.seq / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.seq / 68719476736 + 1, 'changes',
    json_array(NEW.seq));
END;
CREATE TRIGGER changes_moving_update AFTER UPDATE ON changes
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.seq / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.seq / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.seq / 68719476736 + 1, 'changes', k FROM (
    SELECT json_array(OLD.seq) AS k
    UNION SELECT json_array(NEW.seq));
END;
CREATE TRIGGER changes_moving_delete AFTER DELETE ON changes
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.seq / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.seq / 68719476736 + 1, 'changes',
    json_array(OLD.seq));
END;

CREATE TRIGGER record_workspaces_moving_insert AFTER INSERT ON record_workspaces
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.record_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.record_id / 68719476736 + 1, 'record_workspaces',
    json_array(NEW.record_id, NEW.workspace_id));
END;
CREATE TRIGGER record_workspaces_moving_update AFTER UPDATE ON record_workspaces
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.record_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.record_id / 68719476736 + 1, 'record_workspaces', k FROM (
    SELECT json_array(OLD.record_id, OLD.workspace_id) AS k
    UNION SELECT json_array(NEW.record_id, NEW.workspace_id));
END;
CREATE TRIGGER record_workspaces_moving_delete AFTER DELETE ON record_workspaces
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.record_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.record_id / 68719476736 + 1, 'record_workspaces',
    json_array(OLD.record_id, OLD.workspace_id));
END;

CREATE TRIGGER name_terms_moving_insert AFTER INSERT ON name_terms
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.workspace_id / 68719476736 + 1, 'name_terms',
    json_array(NEW.workspace_id, NEW.term, NEW.record_id));
END;
CREATE TRIGGER name_terms_moving_update AFTER UPDATE ON name_terms
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.workspace_id / 68719476736 + 1, 'name_terms', k FROM (
    SELECT json_array(OLD.workspace_id, OLD.term, OLD.record_id) AS k
    UNION SELECT json_array(NEW.workspace_id, NEW.term, NEW.record_id));
END;
CREATE TRIGGER name_terms_moving_delete AFTER DELETE ON name_terms
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.workspace_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.workspace_id / 68719476736 + 1, 'name_terms',
    json_array(OLD.workspace_id, OLD.term, OLD.record_id));
END;

CREATE TRIGGER record_sort_moving_insert AFTER INSERT ON record_sort
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.workspace_id / 68719476736 + 1, 'record_sort',
    json_array(NEW.workspace_id, NEW.key, NEW.value, NEW.record_id));
END;
CREATE TRIGGER record_sort_moving_update AFTER UPDATE ON record_sort
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.workspace_id / 68719476736 + 1, 'record_sort', k FROM (
    SELECT json_array(OLD.workspace_id, OLD.key, OLD.value, OLD.record_id) AS k
    UNION SELECT json_array(NEW.workspace_id, NEW.key, NEW.value, NEW.record_id));
END;
CREATE TRIGGER record_sort_moving_delete AFTER DELETE ON record_sort
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.workspace_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.workspace_id / 68719476736 + 1, 'record_sort',
    json_array(OLD.workspace_id, OLD.key, OLD.value, OLD.record_id));
END;

CREATE TRIGGER record_index_moving_insert AFTER INSERT ON record_index
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.record_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.record_id / 68719476736 + 1, 'record_index',
    json_array(NEW.record_id, NEW.field));
END;
CREATE TRIGGER record_index_moving_update AFTER UPDATE ON record_index
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.record_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.record_id / 68719476736 + 1, 'record_index', k FROM (
    SELECT json_array(OLD.record_id, OLD.field) AS k
    UNION SELECT json_array(NEW.record_id, NEW.field));
END;
CREATE TRIGGER record_index_moving_delete AFTER DELETE ON record_index
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.record_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.record_id / 68719476736 + 1, 'record_index',
    json_array(OLD.record_id, OLD.field));
END;

CREATE TRIGGER record_referrers_moving_insert AFTER INSERT ON record_referrers
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.workspace_id / 68719476736 + 1, 'record_referrers',
    json_array(NEW.workspace_id, NEW.target_id, NEW.object_id, NEW.field, NEW.record_id));
END;
CREATE TRIGGER record_referrers_moving_update AFTER UPDATE ON record_referrers
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.workspace_id / 68719476736 + 1, 'record_referrers', k FROM (
    SELECT json_array(OLD.workspace_id, OLD.target_id, OLD.object_id, OLD.field, OLD.record_id) AS k
    UNION SELECT json_array(NEW.workspace_id, NEW.target_id, NEW.object_id, NEW.field, NEW.record_id));
END;
CREATE TRIGGER record_referrers_moving_delete AFTER DELETE ON record_referrers
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.workspace_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.workspace_id / 68719476736 + 1, 'record_referrers',
    json_array(OLD.workspace_id, OLD.target_id, OLD.object_id, OLD.field, OLD.record_id));
END;

CREATE TRIGGER record_refs_moving_insert AFTER INSERT ON record_refs
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.record_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.record_id / 68719476736 + 1, 'record_refs',
    json_array(NEW.record_id, NEW.field, NEW.target_id));
END;
CREATE TRIGGER record_refs_moving_update AFTER UPDATE ON record_refs
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.record_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.record_id / 68719476736 + 1, 'record_refs', k FROM (
    SELECT json_array(OLD.record_id, OLD.field, OLD.target_id) AS k
    UNION SELECT json_array(NEW.record_id, NEW.field, NEW.target_id));
END;
CREATE TRIGGER record_refs_moving_delete AFTER DELETE ON record_refs
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.record_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.record_id / 68719476736 + 1, 'record_refs',
    json_array(OLD.record_id, OLD.field, OLD.target_id));
END;

CREATE TRIGGER webhooks_moving_insert AFTER INSERT ON webhooks
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'webhooks',
    json_array(NEW.id));
END;
CREATE TRIGGER webhooks_moving_update AFTER UPDATE ON webhooks
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'webhooks', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER webhooks_moving_delete AFTER DELETE ON webhooks
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'webhooks',
    json_array(OLD.id));
END;

CREATE TRIGGER imports_moving_insert AFTER INSERT ON imports
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'imports',
    json_array(NEW.id));
END;
CREATE TRIGGER imports_moving_update AFTER UPDATE ON imports
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'imports', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER imports_moving_delete AFTER DELETE ON imports
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'imports',
    json_array(OLD.id));
END;

CREATE TRIGGER import_errors_moving_insert AFTER INSERT ON import_errors
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.import_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.import_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.import_id / 68719476736 + 1, 'import_errors',
    json_array(NEW.import_id, NEW.row));
END;
CREATE TRIGGER import_errors_moving_update AFTER UPDATE ON import_errors
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.import_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.import_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.import_id / 68719476736 + 1, 'import_errors', k FROM (
    SELECT json_array(OLD.import_id, OLD.row) AS k
    UNION SELECT json_array(NEW.import_id, NEW.row));
END;
CREATE TRIGGER import_errors_moving_delete AFTER DELETE ON import_errors
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.import_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.import_id / 68719476736 + 1, 'import_errors',
    json_array(OLD.import_id, OLD.row));
END;

CREATE TRIGGER writes_moving_insert AFTER INSERT ON writes
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = CASE WHEN substr(NEW.id, 10, 2) = '-t'
    THEN CAST(substr(NEW.id, 12, instr(substr(NEW.id, 12), '-') - 1) AS INTEGER) ELSE 1 END)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = CASE WHEN substr(NEW.id, 10, 2) = '-t'
    THEN CAST(substr(NEW.id, 12, instr(substr(NEW.id, 12), '-') - 1) AS INTEGER) ELSE 1 END
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (CASE WHEN substr(NEW.id, 10, 2) = '-t'
    THEN CAST(substr(NEW.id, 12, instr(substr(NEW.id, 12), '-') - 1) AS INTEGER) ELSE 1 END, 'writes',
    json_array(NEW.id));
END;
CREATE TRIGGER writes_moving_update AFTER UPDATE ON writes
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = CASE WHEN substr(NEW.id, 10, 2) = '-t'
    THEN CAST(substr(NEW.id, 12, instr(substr(NEW.id, 12), '-') - 1) AS INTEGER) ELSE 1 END)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = CASE WHEN substr(NEW.id, 10, 2) = '-t'
    THEN CAST(substr(NEW.id, 12, instr(substr(NEW.id, 12), '-') - 1) AS INTEGER) ELSE 1 END
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT CASE WHEN substr(NEW.id, 10, 2) = '-t'
    THEN CAST(substr(NEW.id, 12, instr(substr(NEW.id, 12), '-') - 1) AS INTEGER) ELSE 1 END, 'writes', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER writes_moving_delete AFTER DELETE ON writes
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = CASE WHEN substr(OLD.id, 10, 2) = '-t'
    THEN CAST(substr(OLD.id, 12, instr(substr(OLD.id, 12), '-') - 1) AS INTEGER) ELSE 1 END AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (CASE WHEN substr(OLD.id, 10, 2) = '-t'
    THEN CAST(substr(OLD.id, 12, instr(substr(OLD.id, 12), '-') - 1) AS INTEGER) ELSE 1 END, 'writes',
    json_array(OLD.id));
END;

CREATE TRIGGER sequences_moving_insert AFTER INSERT ON sequences
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.tenant)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.tenant
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.tenant, 'sequences',
    json_array(NEW.name, NEW.tenant));
END;
CREATE TRIGGER sequences_moving_update AFTER UPDATE ON sequences
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.tenant)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.tenant
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.tenant, 'sequences', k FROM (
    SELECT json_array(OLD.name, OLD.tenant) AS k
    UNION SELECT json_array(NEW.name, NEW.tenant));
END;
CREATE TRIGGER sequences_moving_delete AFTER DELETE ON sequences
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.tenant AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.tenant, 'sequences',
    json_array(OLD.name, OLD.tenant));
END;

CREATE TRIGGER feed_horizons_moving_insert AFTER INSERT ON feed_horizons
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.tenant)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.tenant
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.tenant, 'feed_horizons',
    json_array(NEW.tenant));
END;
CREATE TRIGGER feed_horizons_moving_update AFTER UPDATE ON feed_horizons
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.tenant)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.tenant
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.tenant, 'feed_horizons', k FROM (
    SELECT json_array(OLD.tenant) AS k
    UNION SELECT json_array(NEW.tenant));
END;
CREATE TRIGGER feed_horizons_moving_delete AFTER DELETE ON feed_horizons
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.tenant AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.tenant, 'feed_horizons',
    json_array(OLD.tenant));
END;
