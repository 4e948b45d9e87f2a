-- What references a record, read by the page: a reader pays for the referencing records it can
-- read, and a delete for the references that decide it, never for references of deleted records,
-- of records the reader cannot read, or by fields that do not restrict deletes.

-- 1. The reference fields of current definitions by the object they reference, with what deleting
-- a target does. A new current version of a definition writes its own (its fields are in the row).
CREATE TABLE reference_targets (
  target    INTEGER NOT NULL,
  object_id INTEGER NOT NULL,
  field     TEXT    NOT NULL,
  on_delete TEXT    NOT NULL,
  PRIMARY KEY (target, object_id, field)
) STRICT, WITHOUT ROWID;

INSERT INTO reference_targets (target, object_id, field, on_delete)
  SELECT target, object_id, name, on_delete FROM reference_fields WHERE target IS NOT NULL;

CREATE TRIGGER reference_targets_on_version AFTER INSERT ON object_versions
WHEN NEW.version = (SELECT current_version FROM objects WHERE id = NEW.object_id)
BEGIN
  DELETE FROM reference_targets WHERE object_id = NEW.object_id;
  INSERT INTO reference_targets (target, object_id, field, on_delete)
  SELECT f.value ->> '$.target', NEW.object_id, f.value ->> '$.name', coalesce(f.value ->> '$.onDelete', 'restrict')
  FROM json_each(NEW.fields) f
  WHERE f.value ->> '$.type' = 'reference' AND f.value ->> '$.target' IS NOT NULL;
END;

-- 2. Whether the referencing record is live, kept with each reference: a record's delete and restore
-- flip its own references (a record is created live, and a write that changes its references never
-- deletes or restores it in the same statement). Only live references are indexed by target.
ALTER TABLE record_refs ADD COLUMN live INTEGER NOT NULL DEFAULT 1;
UPDATE record_refs SET live = 0 WHERE record_id IN (SELECT id FROM records WHERE deleted = 1);
DROP INDEX record_refs_by_target;
CREATE INDEX record_refs_live_by_target ON record_refs (target_id, object_id, field, record_id) WHERE live = 1;

CREATE TRIGGER record_refs_live AFTER UPDATE OF deleted ON records
WHEN NEW.deleted IS NOT OLD.deleted
BEGIN
  UPDATE record_refs SET live = 1 - NEW.deleted WHERE record_id = NEW.id;
END;

-- 3. A delete is refused while a live record other than itself references it by a field that
-- restricts deletes: the fields referencing the record's object that restrict, then each one's live
-- references of the record. A reference by a `keep` field or of a deleted record is never read.
DROP TRIGGER record_refs_on_delete;
CREATE TRIGGER record_refs_on_delete BEFORE UPDATE OF deleted ON records
WHEN NEW.deleted = 1 AND OLD.deleted = 0 AND NEW.version > OLD.version
BEGIN
  SELECT RAISE(ABORT, 'record_referenced') WHERE EXISTS (SELECT 1 FROM reference_targets t
    CROSS JOIN record_refs r ON r.target_id = NEW.id AND r.live = 1 AND r.object_id = t.object_id AND r.field = t.field
    WHERE t.target = NEW.object_id AND t.on_delete = 'restrict' AND r.record_id <> NEW.id);
END;

-- 4. The live references of each workspace's records, by target: what references a record, walked
-- in each workspace its reader belongs to, so records the reader cannot read are never read.
CREATE TABLE record_referrers (
  workspace_id INTEGER NOT NULL,
  target_id    INTEGER NOT NULL,
  object_id    INTEGER NOT NULL,
  field        TEXT    NOT NULL,
  record_id    INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, target_id, object_id, field, record_id)
) STRICT, WITHOUT ROWID;

INSERT INTO record_referrers (workspace_id, target_id, object_id, field, record_id)
  SELECT w.workspace_id, r.target_id, r.object_id, r.field, r.record_id
  FROM record_refs r JOIN record_workspaces w ON w.record_id = r.record_id
  WHERE r.live = 1;

CREATE TRIGGER record_referrers_on_ref AFTER INSERT ON record_refs WHEN NEW.live = 1
BEGIN
  INSERT INTO record_referrers (workspace_id, target_id, object_id, field, record_id)
  SELECT workspace_id, NEW.target_id, NEW.object_id, NEW.field, NEW.record_id FROM record_workspaces
  WHERE record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER record_referrers_on_unref AFTER DELETE ON record_refs WHEN OLD.live = 1
BEGIN
  DELETE FROM record_referrers WHERE target_id = OLD.target_id AND object_id = OLD.object_id AND field = OLD.field
    AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
END;

CREATE TRIGGER record_referrers_on_live AFTER UPDATE OF live ON record_refs WHEN NEW.live IS NOT OLD.live
BEGIN
  DELETE FROM record_referrers WHERE NEW.live = 0 AND target_id = OLD.target_id AND object_id = OLD.object_id
    AND field = OLD.field AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
  INSERT INTO record_referrers (workspace_id, target_id, object_id, field, record_id)
  SELECT workspace_id, NEW.target_id, NEW.object_id, NEW.field, NEW.record_id FROM record_workspaces
  WHERE NEW.live = 1 AND record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

-- A record is shared with a workspace after its references are written (its creation): the
-- workspace gets them then.
CREATE TRIGGER record_referrers_on_share AFTER INSERT ON record_workspaces
BEGIN
  INSERT INTO record_referrers (workspace_id, target_id, object_id, field, record_id)
  SELECT NEW.workspace_id, target_id, object_id, field, record_id FROM record_refs
  WHERE record_id = NEW.record_id AND live = 1
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER record_referrers_on_unshare AFTER DELETE ON record_workspaces
BEGIN
  DELETE FROM record_referrers WHERE workspace_id = OLD.workspace_id
    AND (target_id, object_id, field, record_id) IN (SELECT target_id, object_id, field, record_id FROM record_refs
      WHERE record_id = OLD.record_id);
END;
