-- Indexed and unique fields.

-- 1. The fields of each object's current definition marked `indexed` or `unique` (unique implies
-- indexed), with their type.
CREATE VIEW index_fields AS
  SELECT o.id AS object_id, f.value ->> '$.name' AS name, f.value ->> '$.type' AS type,
    coalesce(f.value ->> '$.unique', 0) AS is_unique
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version,
    json_each(v.fields) f
  WHERE coalesce(f.value ->> '$.indexed', 0) OR coalesce(f.value ->> '$.unique', 0);

-- 2. The values of indexed fields, one row per record and field, beside the record's JSON (where
-- no SQL index can reach a value). `value` is comparable in SQL: the value itself (a boolean as
-- 1 or 0), a date-time as epoch milliseconds (offsets make its text unordered). `unique_key` is
-- set only for a unique field of a live record: the value, lower-cased for text and email, so
-- the unique index below makes D1 itself refuse a second live record holding it.
CREATE TABLE record_index (
  record_id  INTEGER NOT NULL REFERENCES records (id),
  field      TEXT    NOT NULL,
  object_id  INTEGER NOT NULL,
  value      ANY,
  unique_key ANY,
  PRIMARY KEY (record_id, field)
) STRICT, WITHOUT ROWID;
-- A filter or sort on an indexed field walks this: rows read grow with the page.
CREATE INDEX record_index_by_value ON record_index (field, value, record_id);
CREATE UNIQUE INDEX record_index_unique ON record_index (object_id, field, unique_key)
  WHERE unique_key IS NOT NULL;

-- 3. The index is written by the statement that writes the record, so it is in the record's
-- transaction whatever path wrote it. A write costs index rows only for the indexed fields whose
-- value it changed (or all of a record's unique fields when it is deleted or restored).
CREATE TRIGGER record_index_on_insert AFTER INSERT ON records
BEGIN
  INSERT INTO record_index (record_id, field, object_id, value, unique_key)
  SELECT NEW.id, name, NEW.object_id, value, CASE WHEN is_unique AND NOT NEW.deleted
      THEN CASE WHEN type IN ('text', 'email') THEN lower(value) ELSE value END END
  FROM (SELECT f.name, f.type, f.is_unique, CASE f.type WHEN 'datetime' THEN CAST(round(1000 * coalesce(
        unixepoch(upper(e.value ->> '$.value'), 'subsec'),
        unixepoch(upper(substr(e.value ->> '$.value', 1, 17) || '59' || substr(e.value ->> '$.value', 20)),
          'subsec') + 1
      )) AS INTEGER) ELSE e.value ->> '$.value' END AS value
    FROM index_fields f JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name
    WHERE f.object_id = NEW.object_id)
  WHERE true;
END;

CREATE TRIGGER record_index_on_update AFTER UPDATE OF field_values, deleted ON records
WHEN NEW.field_values IS NOT OLD.field_values OR NEW.deleted IS NOT OLD.deleted
BEGIN
  DELETE FROM record_index WHERE record_id = NEW.id AND field IN (
    SELECT o.value ->> '$.fieldName' FROM json_each(OLD.field_values) o
    WHERE NOT EXISTS (SELECT 1 FROM json_each(NEW.field_values) n
      WHERE n.value ->> '$.fieldName' = o.value ->> '$.fieldName'));
  INSERT INTO record_index (record_id, field, object_id, value, unique_key)
  SELECT NEW.id, name, NEW.object_id, value, CASE WHEN is_unique AND NOT NEW.deleted
      THEN CASE WHEN type IN ('text', 'email') THEN lower(value) ELSE value END END
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
