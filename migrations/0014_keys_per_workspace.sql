-- Reads at real size: sorts and searches walk keys kept per workspace, and every folded key is
-- computed once, in the Worker.
--
-- 1. Keys the Worker computes with the record and writes in the same row (no row of their own):
-- `terms`, the name's search terms (JSON array, see src/domain/record-keys.ts), and `folds`, the
-- case folds of text values that SQLite's lower() would not fold alike (JSON object by field
-- name, the name's under "#"). A record written before this migration has `folds` NULL: the Cron
-- Trigger computes its keys (the partial index finds them; a new record costs it nothing).
ALTER TABLE records ADD COLUMN terms TEXT;
ALTER TABLE records ADD COLUMN folds TEXT;
DROP INDEX records_without_name_key;
CREATE INDEX records_without_keys ON records (id) WHERE folds IS NULL;

-- 2. The record index without the fold written out in SQL: a unique text or email value's key is
-- the Worker's fold when it stored one, else lower() (ASCII folds alike in both). A record written
-- before keeps the key it has until its next write.
DROP TRIGGER record_index_on_insert;
CREATE TRIGGER record_index_on_insert AFTER INSERT ON records
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
WHEN NEW.field_values IS NOT OLD.field_values OR NEW.deleted IS NOT OLD.deleted
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

-- 3. Sort keys per workspace: for each workspace a record is shared with, its creation time
-- (`c`), update time (`u`), name (`n`) and the value of each indexed field (`f:<field>`, from
-- `record_index`; a value its type cannot order, kept there as NULL, is left out). A sort walks
-- one workspace's keys in order, so its rows read grow with the page, not the workspace or the
-- database. A patch moves its record's `u` key in each of its workspaces: two rows each.
CREATE TABLE record_sort (
  workspace_id INTEGER NOT NULL,
  key          TEXT    NOT NULL,
  value        ANY     NOT NULL,
  record_id    INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, key, value, record_id)
) STRICT, WITHOUT ROWID;

-- 4. Search terms per workspace: the name's terms (`~` and the whole name's words, `=` and a
-- word, a word's first letters), so a search reads the records that hold a term in id order.
CREATE TABLE name_terms (
  workspace_id INTEGER NOT NULL,
  term         TEXT    NOT NULL,
  record_id    INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, term, record_id)
) STRICT, WITHOUT ROWID;

-- Only live records have terms: a search passes over no deleted record (one that names `deleted`
-- reads the workspace's records instead). Sharing a record with a workspace (its creation) gives
-- the workspace its keys and (a live record) its terms.
CREATE TRIGGER record_keys_on_share AFTER INSERT ON record_workspaces
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

-- Deleting a record takes its terms out of every workspace (by their primary keys: its terms as
-- they were and as they are); restoring it puts them back.
CREATE TRIGGER name_terms_on_delete AFTER UPDATE OF deleted ON records
WHEN NEW.deleted = 1 AND OLD.deleted = 0
BEGIN
  DELETE FROM name_terms WHERE (workspace_id, term, record_id) IN (
    SELECT w.workspace_id, t.value, NEW.id FROM record_workspaces w,
      (SELECT value FROM json_each(coalesce(OLD.terms, '[]'))
        UNION SELECT value FROM json_each(coalesce(NEW.terms, '[]'))) t
    WHERE w.record_id = NEW.id);
END;

CREATE TRIGGER name_terms_on_restore AFTER UPDATE OF deleted ON records
WHEN NEW.deleted = 0 AND OLD.deleted = 1
BEGIN
  INSERT INTO name_terms (workspace_id, term, record_id)
  SELECT w.workspace_id, t.value, NEW.id FROM record_workspaces w, json_each(coalesce(NEW.terms, '[]')) t
  WHERE w.record_id = NEW.id
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER record_keys_on_unshare AFTER DELETE ON record_workspaces
BEGIN
  DELETE FROM record_sort WHERE workspace_id = OLD.workspace_id AND record_id = OLD.record_id;
  DELETE FROM name_terms WHERE workspace_id = OLD.workspace_id AND record_id = OLD.record_id;
END;

CREATE TRIGGER record_sort_on_update AFTER UPDATE OF updated_at, name ON records
WHEN NEW.updated_at IS NOT OLD.updated_at OR NEW.name IS NOT OLD.name
BEGIN
  UPDATE record_sort SET value = NEW.updated_at
  WHERE NEW.updated_at IS NOT OLD.updated_at AND key = 'u' AND value = OLD.updated_at AND record_id = NEW.id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = NEW.id);
  UPDATE record_sort SET value = NEW.name
  WHERE NEW.name IS NOT OLD.name AND key = 'n' AND value = OLD.name AND record_id = NEW.id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = NEW.id);
END;

CREATE TRIGGER name_terms_on_update AFTER UPDATE OF terms ON records
WHEN NEW.terms IS NOT OLD.terms
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

-- An indexed value's sort keys follow its row in `record_index`, whatever wrote it (a record's
-- write, an index build, a definition).
CREATE TRIGGER record_sort_on_index_insert AFTER INSERT ON record_index WHEN NEW.value IS NOT NULL
BEGIN
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT workspace_id, 'f:' || NEW.field, NEW.value, NEW.record_id FROM record_workspaces
  WHERE record_id = NEW.record_id
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER record_sort_on_index_update AFTER UPDATE OF value ON record_index
WHEN NEW.value IS NOT OLD.value
BEGIN
  DELETE FROM record_sort WHERE key = 'f:' || OLD.field AND value = OLD.value AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
  INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT workspace_id, 'f:' || NEW.field, NEW.value, NEW.record_id FROM record_workspaces
  WHERE record_id = NEW.record_id AND NEW.value IS NOT NULL
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER record_sort_on_index_delete AFTER DELETE ON record_index WHEN OLD.value IS NOT NULL
BEGIN
  DELETE FROM record_sort WHERE key = 'f:' || OLD.field AND value = OLD.value AND record_id = OLD.record_id
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id);
END;

-- 5. The keys of the records already written. Sort keys from their columns and index; search
-- terms from the name's words they have (`name_key`), the same terms the Worker computes from
-- those words, until the Cron Trigger computes each record's keys again from its name (setting
-- `terms` gives each workspace the record's terms, by the trigger above).
INSERT INTO record_sort (workspace_id, key, value, record_id)
  SELECT w.workspace_id, 'c', r.created_at, r.id FROM record_workspaces w JOIN records r ON r.id = w.record_id
  UNION ALL SELECT w.workspace_id, 'u', r.updated_at, r.id FROM record_workspaces w JOIN records r ON r.id = w.record_id
  UNION ALL SELECT w.workspace_id, 'n', r.name, r.id FROM record_workspaces w JOIN records r ON r.id = w.record_id
  UNION ALL SELECT w.workspace_id, 'f:' || i.field, i.value, i.record_id
    FROM record_workspaces w JOIN record_index i ON i.record_id = w.record_id WHERE i.value IS NOT NULL;

UPDATE records SET terms = (SELECT json_group_array(term) FROM (
    SELECT '~' || k.key AS term FROM (SELECT 1) WHERE k.key <> '' AND length(k.key) <= 200
    UNION SELECT '=' || substr(w.value, 1, 201) FROM json_each('["' || replace(k.key, ' ', '","') || '"]') w
      WHERE w.value <> ''
    UNION SELECT substr(w.value, 1, n.value) FROM json_each('["' || replace(k.key, ' ', '","') || '"]') w,
      json_each('[1,2,3]') n WHERE w.value <> '' AND n.value <= length(w.value)))
  FROM (SELECT id, coalesce(name_key, lower(name)) AS key FROM records) k
  WHERE k.id = records.id AND k.key NOT GLOB '*["\\]*';

-- 6. Walks of indexed values read the workspace's keys now: the index by value served them only,
-- and cost every write of an indexed value a row.
DROP INDEX record_index_by_value;
