-- A reference names a record its writer can read: under a role, one of an object the role lists as
-- readable and, for `own` rows, one the writer owns. Otherwise a write could tell a hidden record
-- from a missing one (and a restricting reference could pin a record its writer cannot see).
DROP TRIGGER record_refs_on_insert;
CREATE TRIGGER record_refs_on_insert AFTER INSERT ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (EXISTS (SELECT 1 FROM reference_fields WHERE object_id = NEW.object_id))
BEGIN
  SELECT RAISE(ABORT, 'invalid_reference') FROM reference_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
  WHERE f.object_id = NEW.object_id AND NOT EXISTS (SELECT 1 FROM records x
    WHERE x.id = t.value AND x.object_id = f.target AND x.deleted = 0 AND EXISTS (SELECT 1 FROM record_workspaces w
      JOIN memberships m ON m.workspace_id = w.workspace_id AND m.user_id = NEW.updated_by WHERE w.record_id = x.id
      AND (m.role_id IS NULL OR EXISTS (SELECT 1 FROM roles ro, json_each(ro.objects) j
        WHERE ro.id = m.role_id AND j.value ->> '$.objectId' = x.object_id AND j.value ->> '$.read'
          AND (j.value ->> '$.rows' = 'all' OR x.owned_by = m.user_id)))));
  INSERT INTO record_refs (record_id, field, target_id, object_id)
  SELECT NEW.id, f.name, t.value, NEW.object_id FROM reference_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
  WHERE f.object_id = NEW.object_id
  ON CONFLICT DO NOTHING;
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
        JOIN memberships m ON m.workspace_id = w.workspace_id AND m.user_id = NEW.updated_by WHERE w.record_id = x.id
        AND (m.role_id IS NULL OR EXISTS (SELECT 1 FROM roles ro, json_each(ro.objects) j
        WHERE ro.id = m.role_id AND j.value ->> '$.objectId' = x.object_id AND j.value ->> '$.read'
          AND (j.value ->> '$.rows' = 'all' OR x.owned_by = m.user_id)))));
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
