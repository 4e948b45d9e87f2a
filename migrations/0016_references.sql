-- Related records: a field of type `reference` holds a record id (or, `multiple`, an array of them)
-- of its `target` object. D1 itself keeps references sound, in the transaction of each write, so
-- no interleaving of requests can leave a live record referencing a deleted one.

-- 1. The reference fields of each object's current definition, with what deleting a target does.
CREATE VIEW reference_fields AS
  SELECT o.id AS object_id, f.value ->> '$.name' AS name, f.value ->> '$.target' AS target,
    coalesce(f.value ->> '$.onDelete', 'restrict') AS on_delete
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version,
    json_each(v.fields) f
  WHERE f.value ->> '$.type' = 'reference';

-- 2. Every reference a record holds (live or deleted), one row per field and target. By record, to
-- follow its writes; by target, to find what references a record (a delete's check, a list of
-- referencing records, a filter on a reference).
CREATE TABLE record_refs (
  record_id INTEGER NOT NULL,
  field     TEXT    NOT NULL,
  target_id INTEGER NOT NULL,
  object_id INTEGER NOT NULL,
  PRIMARY KEY (record_id, field, target_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX record_refs_by_target ON record_refs (target_id, object_id, field, record_id);

-- 3. A reference written (by a create, or a patch that adds it) must name a live record of the
-- field's target that the writer (`updated_by`) can read: one shared with a workspace the writer
-- belongs to. A single id and an array of ids are both rows of json_each over the value. A write of
-- an object with no reference field reads its definition once here and nothing more.
CREATE TRIGGER record_refs_on_insert AFTER INSERT ON records
WHEN EXISTS (SELECT 1 FROM reference_fields WHERE object_id = NEW.object_id)
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

CREATE TRIGGER record_refs_on_update AFTER UPDATE OF field_values ON records
WHEN NEW.field_values IS NOT OLD.field_values
  AND EXISTS (SELECT 1 FROM reference_fields WHERE object_id = NEW.object_id)
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

-- 4. Deleting a record that a live record references by a `restrict` field is refused; restoring a
-- record whose `restrict` reference names a deleted record is refused too (it would be a live record
-- referencing a deleted one). A record referencing itself does not keep itself alive. A write
-- computed from a stale version (NULL, or not higher) is left to the version guard: a conflict,
-- recomputed on what D1 holds, not a refusal.
CREATE TRIGGER record_refs_on_delete BEFORE UPDATE OF deleted ON records
WHEN NEW.deleted = 1 AND OLD.deleted = 0 AND NEW.version > OLD.version
BEGIN
  SELECT RAISE(ABORT, 'record_referenced') WHERE EXISTS (SELECT 1 FROM record_refs r
    JOIN records s ON s.id = r.record_id AND s.deleted = 0 AND s.id <> NEW.id
    JOIN reference_fields f ON f.object_id = r.object_id AND f.name = r.field AND f.on_delete = 'restrict'
    WHERE r.target_id = NEW.id);
END;

CREATE TRIGGER record_refs_on_restore BEFORE UPDATE OF deleted ON records
WHEN NEW.deleted = 0 AND OLD.deleted = 1 AND NEW.version > OLD.version
BEGIN
  SELECT RAISE(ABORT, 'invalid_reference') WHERE EXISTS (SELECT 1 FROM record_refs r
    JOIN reference_fields f ON f.object_id = r.object_id AND f.name = r.field AND f.on_delete = 'restrict'
    JOIN records x ON x.id = r.target_id AND x.deleted = 1 AND x.id <> NEW.id
    WHERE r.record_id = NEW.id);
END;

-- 5. A reference's sort keys per workspace (`f:<field>`, one per id): filters on references walk
-- them as they walk an indexed field's, whether the field holds one id or several.
CREATE TRIGGER record_refs_sort_on_insert AFTER INSERT ON record_refs
BEGIN
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT workspace_id, 'f:' || NEW.field, NEW.target_id, NEW.record_id FROM record_workspaces
  WHERE record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER record_refs_sort_on_delete AFTER DELETE ON record_refs
BEGIN
  DELETE FROM record_sort WHERE key = 'f:' || OLD.field AND value = OLD.target_id AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
END;

CREATE TRIGGER record_refs_on_share AFTER INSERT ON record_workspaces
BEGIN
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT NEW.workspace_id, 'f:' || field, target_id, NEW.record_id FROM record_refs WHERE record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;
