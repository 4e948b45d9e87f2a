-- Files on records. A field of type `file` holds an array of files, each `{id, name, size,
-- contentType}` as its upload answered it. The bytes are in R2 under `object_key`, which starts
-- `files/<tenant>/`; a row here says what they are, who uploaded them and which record holds them.
-- Ids are in the tenant's block; the bytes need no copying when the tenant moves, and a tenant's
-- files are one prefix.
CREATE TABLE files (
  id           INTEGER PRIMARY KEY CHECK (id >= 1),
  workspace_id INTEGER NOT NULL,
  name         TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  size         INTEGER NOT NULL CHECK (size >= 1),
  content_type TEXT    NOT NULL,
  sha256       TEXT    NOT NULL,
  created_by   INTEGER NOT NULL,
  created_at   INTEGER NOT NULL CHECK (created_at >= 0),
  object_key   TEXT    NOT NULL,
  -- The record holding the file (live or deleted: a deleted record can be restored); NULL while no
  -- record holds it, since `free_since`.
  record_id    INTEGER,
  free_since   INTEGER NOT NULL
) STRICT;
CREATE INDEX files_by_record ON files (record_id) WHERE record_id IS NOT NULL;
CREATE INDEX files_free ON files (free_since) WHERE record_id IS NULL;

-- A file whose bytes are going up in parts (R2's multipart upload): its row joins `files` on completion.
CREATE TABLE file_uploads (
  id           INTEGER PRIMARY KEY CHECK (id >= 1),
  upload_id    TEXT    NOT NULL,
  workspace_id INTEGER NOT NULL,
  name         TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  content_type TEXT    NOT NULL,
  created_by   INTEGER NOT NULL,
  created_at   INTEGER NOT NULL CHECK (created_at >= 0),
  parts        TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(parts))
) STRICT;
CREATE INDEX file_uploads_by_age ON file_uploads (created_at);

-- The file fields of each object's current definition.
CREATE VIEW file_fields AS
  SELECT o.id AS object_id, f.value ->> '$.name' AS name
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version,
    json_each(v.fields) f
  WHERE f.value ->> '$.type' = 'file';

-- A file written into a record must be one of the record's tenant, exactly as its upload answered
-- it, and either held by this record already or held by none and uploaded by the writer. In the
-- write's own transaction, so no two records can take one file. The record then holds it; a file
-- the record no longer names is free from then on (and removed 24 h later).
CREATE TRIGGER record_files_on_insert AFTER INSERT ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND EXISTS (SELECT 1 FROM file_fields WHERE object_id = NEW.object_id)
BEGIN
  SELECT RAISE(ABORT, 'invalid_file') FROM file_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
  WHERE f.object_id = NEW.object_id AND NOT EXISTS (SELECT 1 FROM files x
    WHERE x.id = t.value ->> '$.id' AND x.id / 68719476736 = NEW.id / 68719476736
      AND x.name = t.value ->> '$.name' AND x.size = t.value ->> '$.size'
      AND x.content_type = t.value ->> '$.contentType'
      AND x.record_id IS NULL AND x.created_by = NEW.updated_by);
  UPDATE files SET record_id = NEW.id WHERE id IN (SELECT t.value ->> '$.id' FROM file_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
    WHERE f.object_id = NEW.object_id);
END;

CREATE TRIGGER record_files_on_update AFTER UPDATE OF field_values ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND NEW.field_values IS NOT OLD.field_values
  AND (EXISTS (SELECT 1 FROM file_fields WHERE object_id = NEW.object_id)
    OR EXISTS (SELECT 1 FROM files WHERE record_id = NEW.id))
BEGIN
  SELECT RAISE(ABORT, 'invalid_file') FROM file_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
  WHERE f.object_id = NEW.object_id AND NOT EXISTS (SELECT 1 FROM files x
    WHERE x.id = t.value ->> '$.id' AND x.id / 68719476736 = NEW.id / 68719476736
      AND x.name = t.value ->> '$.name' AND x.size = t.value ->> '$.size'
      AND x.content_type = t.value ->> '$.contentType'
      AND (x.record_id = NEW.id OR (x.record_id IS NULL AND x.created_by = NEW.updated_by)));
  UPDATE files SET record_id = NULL, free_since = NEW.updated_at
  WHERE record_id = NEW.id AND id NOT IN (SELECT t.value ->> '$.id' FROM file_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
    WHERE f.object_id = NEW.object_id);
  UPDATE files SET record_id = NEW.id WHERE record_id IS NULL AND id IN (SELECT t.value ->> '$.id' FROM file_fields f
    JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name, json_each(e.value, '$.value') t
    WHERE f.object_id = NEW.object_id);
END;

-- A tenant's files and uploads move with it, as its other rows do (the bytes stay where they are).
CREATE TRIGGER files_moving_insert AFTER INSERT ON files
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'files',
    json_array(NEW.id));
END;
CREATE TRIGGER files_moving_update AFTER UPDATE ON files
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'files', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER files_moving_delete AFTER DELETE ON files
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'files',
    json_array(OLD.id));
END;
CREATE TRIGGER file_uploads_moving_insert AFTER INSERT ON file_uploads
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.id / 68719476736 + 1, 'file_uploads',
    json_array(NEW.id));
END;
CREATE TRIGGER file_uploads_moving_update AFTER UPDATE ON file_uploads
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.id / 68719476736 + 1, 'file_uploads', k FROM (
    SELECT json_array(OLD.id) AS k
    UNION SELECT json_array(NEW.id));
END;
CREATE TRIGGER file_uploads_moving_delete AFTER DELETE ON file_uploads
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.id / 68719476736 + 1, 'file_uploads',
    json_array(OLD.id));
END;
