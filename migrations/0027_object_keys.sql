-- One object's records per workspace: each workspace a record is shared with keeps its object
-- (`o`, the object's id) beside its other sort keys, so a list or query of one object walks that
-- object's records of the workspace in id order and never reads another object's. A record's
-- object never changes: its key is written when the record is shared, once, and goes when it is
-- unshared (with its other keys). One row a workspace, on create only. A tenant arriving on this
-- database by a move brings its keys with its rows, as it does the others.
CREATE TRIGGER record_object_key_on_share AFTER INSERT ON record_workspaces
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT NEW.workspace_id, 'o', object_id, NEW.record_id FROM records WHERE id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

INSERT INTO record_sort (workspace_id, key, value, record_id)
SELECT rw.workspace_id, 'o', r.object_id, rw.record_id
FROM record_workspaces rw JOIN records r ON r.id = rw.record_id
WHERE true
ON CONFLICT DO NOTHING;
