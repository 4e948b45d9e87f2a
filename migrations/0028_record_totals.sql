-- Totals kept per group: for each workspace, each object's live records counted by the value of
-- each indexed field an aggregate groups by, with the count and sum of their indexed numbers, and
-- the object's own row (field and value '') counting all its live records there. An aggregate by
-- one indexed field reads its groups' rows (the group of blanks is the object's row less the
-- others) instead of the records. Triggers keep them in each write's own transaction, whatever
-- wrote the index: a record's write, an index build, a definition, a share, a delete or a restore.
-- A tenant arriving by a move brings its totals; one that left (deleted or moved away) keeps none.
--
-- 1. Each index row says whether its record is live, and what its field is to the totals (`role`:
-- 1 a field grouped by, 2 a number measured, 3 both: an integer; a unique field, a group a record,
-- is grouped by reading the records), so what a row adds to the totals
-- is read from the row alone (a record's `deleted` and its rows change in one statement, in no set
-- order).
ALTER TABLE record_index ADD COLUMN live INTEGER NOT NULL DEFAULT 1;
ALTER TABLE record_index ADD COLUMN role INTEGER NOT NULL DEFAULT 0;
UPDATE record_index SET live = 0 WHERE record_id IN (SELECT id FROM records WHERE deleted = 1);
UPDATE record_index SET role = coalesce((
  SELECT CASE WHEN f.type IN ('select', 'boolean', 'text', 'email', 'integer', 'reference', 'date')
          AND NOT f.is_unique THEN 1 ELSE 0 END
        + CASE WHEN f.type IN ('number', 'integer') THEN 2 ELSE 0 END
    FROM index_fields f WHERE f.object_id = record_index.object_id AND f.name = record_index.field), 0)
WHERE true;

DROP TRIGGER record_index_on_insert;
CREATE TRIGGER record_index_on_insert AFTER INSERT ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  INSERT INTO record_index (record_id, field, object_id, value, unique_key, live, role)
  SELECT NEW.id, name, NEW.object_id, value, CASE WHEN is_unique AND NOT NEW.deleted
      THEN CASE WHEN type IN ('text', 'email') THEN coalesce(NEW.folds ->> ('$.' || name), lower(value))
        ELSE value END END,
      1 - NEW.deleted, CASE WHEN type IN ('select', 'boolean', 'text', 'email', 'integer', 'reference', 'date')
          AND NOT is_unique THEN 1 ELSE 0 END
        + CASE WHEN type IN ('number', 'integer') THEN 2 ELSE 0 END
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
  INSERT INTO record_index (record_id, field, object_id, value, unique_key, live, role)
  SELECT NEW.id, name, NEW.object_id, value, CASE WHEN is_unique AND NOT NEW.deleted
      THEN CASE WHEN type IN ('text', 'email') THEN coalesce(NEW.folds ->> ('$.' || name), lower(value))
        ELSE value END END,
      1 - NEW.deleted, CASE WHEN type IN ('select', 'boolean', 'text', 'email', 'integer', 'reference', 'date')
          AND NOT is_unique THEN 1 ELSE 0 END
        + CASE WHEN type IN ('number', 'integer') THEN 2 ELSE 0 END
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
  ON CONFLICT (record_id, field) DO UPDATE SET value = excluded.value, unique_key = excluded.unique_key,
    live = excluded.live, role = excluded.role;
END;

-- 2. The totals. `counts` and `sums` are JSON objects by field name: how many of the group's
-- records hold a number in that field, and their sum (whole numbers add as whole numbers, exactly,
-- until past 2^63; decimals as doubles). A group whose records are all gone is removed.
CREATE TABLE record_totals (
  workspace_id INTEGER NOT NULL,
  object_id    INTEGER NOT NULL,
  field        TEXT    NOT NULL,
  value        ANY     NOT NULL,
  records      INTEGER NOT NULL,
  counts       TEXT    NOT NULL,
  sums         TEXT    NOT NULL,
  PRIMARY KEY (workspace_id, object_id, field, value)
) STRICT, WITHOUT ROWID;

-- 3. An index row, live, puts its record in its value's group (with all the record's numbers) and
-- its own number in the record's other groups and its object's row; gone, it takes them out;
-- changed, it moves them. Each reads the record's other rows as they stand, so the rows one
-- statement changes may change in any order. A changed number costs a row per other group of the
-- record (its other indexed fields grouped by) and its object's row; a changed group two rows.
CREATE TRIGGER record_totals_on_index_insert AFTER INSERT ON record_index
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
  AND NOT EXISTS (SELECT 1 FROM departures WHERE tenant_id = NEW.record_id / 68719476736 + 1)
  AND (NEW.live = 1)
BEGIN
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT w.workspace_id, NEW.object_id, NEW.field, NEW.value, 1, m.counts, m.sums
  FROM record_workspaces w, (SELECT json_group_object(k, 1) AS counts, json_group_object(k, 1 * v) AS sums
    FROM (SELECT field AS k, value AS v FROM record_index
        WHERE record_id = NEW.record_id AND field <> NEW.field AND live = 1 AND role & 2
          AND typeof(value) IN ('integer', 'real')
      UNION ALL SELECT NEW.field, NEW.value
      WHERE (NEW.live = 1 AND NEW.role & 2
        AND typeof(NEW.value) IN ('integer', 'real')))) m
  WHERE NEW.live = 1 AND NEW.role & 1 AND NEW.value IS NOT NULL AND w.record_id = NEW.record_id
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records,
    counts = json_patch(counts, (SELECT json_group_object(e.key, coalesce(counts ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.counts) e)),
    sums = json_patch(sums, (SELECT json_group_object(e.key, coalesce(sums ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.sums) e));
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT w.workspace_id, g.object_id, g.field, g.value, 0, json_object(NEW.field, d.n), json_object(NEW.field, d.s)
  FROM record_workspaces w,
    (SELECT CASE WHEN (NEW.live = 1 AND NEW.role & 2
        AND typeof(NEW.value) IN ('integer', 'real'))
        THEN 1 ELSE 0 END AS n,
      CASE WHEN (NEW.live = 1 AND NEW.role & 2
        AND typeof(NEW.value) IN ('integer', 'real'))
        THEN NEW.value ELSE 0 END AS s) d,
    (SELECT object_id, field, value FROM record_index
      WHERE record_id = NEW.record_id AND field <> NEW.field AND live = 1 AND role & 1 AND value IS NOT NULL
      UNION ALL SELECT NEW.object_id, '', '') g
  WHERE w.record_id = NEW.record_id AND (d.n <> 0 OR d.s <> 0)
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records,
    counts = json_patch(counts, (SELECT json_group_object(e.key, coalesce(counts ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.counts) e)),
    sums = json_patch(sums, (SELECT json_group_object(e.key, coalesce(sums ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.sums) e));
END;

CREATE TRIGGER record_totals_on_index_delete AFTER DELETE ON record_index
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = OLD.record_id / 68719476736 + 1)
  AND NOT EXISTS (SELECT 1 FROM departures WHERE tenant_id = OLD.record_id / 68719476736 + 1)
  AND (OLD.live = 1)
BEGIN
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT w.workspace_id, OLD.object_id, OLD.field, OLD.value, -1, m.counts, m.sums
  FROM record_workspaces w, (SELECT json_group_object(k, -1) AS counts, json_group_object(k, -1 * v) AS sums
    FROM (SELECT field AS k, value AS v FROM record_index
        WHERE record_id = OLD.record_id AND field <> OLD.field AND live = 1 AND role & 2
          AND typeof(value) IN ('integer', 'real')
      UNION ALL SELECT OLD.field, OLD.value
      WHERE (OLD.live = 1 AND OLD.role & 2
        AND typeof(OLD.value) IN ('integer', 'real')))) m
  WHERE OLD.live = 1 AND OLD.role & 1 AND OLD.value IS NOT NULL AND w.record_id = OLD.record_id
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records,
    counts = json_patch(counts, (SELECT json_group_object(e.key, coalesce(counts ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.counts) e)),
    sums = json_patch(sums, (SELECT json_group_object(e.key, coalesce(sums ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.sums) e));
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT w.workspace_id, g.object_id, g.field, g.value, 0, json_object(OLD.field, d.n), json_object(OLD.field, d.s)
  FROM record_workspaces w,
    (SELECT - CASE WHEN (OLD.live = 1 AND OLD.role & 2
        AND typeof(OLD.value) IN ('integer', 'real'))
        THEN 1 ELSE 0 END AS n,
      - CASE WHEN (OLD.live = 1 AND OLD.role & 2
        AND typeof(OLD.value) IN ('integer', 'real'))
        THEN OLD.value ELSE 0 END AS s) d,
    (SELECT object_id, field, value FROM record_index
      WHERE record_id = OLD.record_id AND field <> OLD.field AND live = 1 AND role & 1 AND value IS NOT NULL
      UNION ALL SELECT OLD.object_id, '', '') g
  WHERE w.record_id = OLD.record_id AND (d.n <> 0 OR d.s <> 0)
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records,
    counts = json_patch(counts, (SELECT json_group_object(e.key, coalesce(counts ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.counts) e)),
    sums = json_patch(sums, (SELECT json_group_object(e.key, coalesce(sums ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.sums) e));
  DELETE FROM record_totals WHERE records = 0 AND object_id = OLD.object_id AND field = OLD.field AND value = OLD.value
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id)
    AND NOT EXISTS (SELECT 1 FROM json_each(counts) WHERE value <> 0);
  DELETE FROM record_totals WHERE records = 0 AND object_id = OLD.object_id AND field = '' AND value = ''
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id)
    AND NOT EXISTS (SELECT 1 FROM json_each(counts) WHERE value <> 0);
END;

CREATE TRIGGER record_totals_on_index_update AFTER UPDATE OF value, live, role ON record_index
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
  AND NOT EXISTS (SELECT 1 FROM departures WHERE tenant_id = NEW.record_id / 68719476736 + 1)
  AND (NEW.value IS NOT OLD.value OR NEW.live IS NOT OLD.live OR NEW.role IS NOT OLD.role)
BEGIN
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT w.workspace_id, OLD.object_id, OLD.field, OLD.value, -1, m.counts, m.sums
  FROM record_workspaces w, (SELECT json_group_object(k, -1) AS counts, json_group_object(k, -1 * v) AS sums
    FROM (SELECT field AS k, value AS v FROM record_index
        WHERE record_id = OLD.record_id AND field <> OLD.field AND live = 1 AND role & 2
          AND typeof(value) IN ('integer', 'real')
      UNION ALL SELECT OLD.field, OLD.value
      WHERE (OLD.live = 1 AND OLD.role & 2
        AND typeof(OLD.value) IN ('integer', 'real')))) m
  WHERE OLD.live = 1 AND OLD.role & 1 AND OLD.value IS NOT NULL AND w.record_id = OLD.record_id
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records,
    counts = json_patch(counts, (SELECT json_group_object(e.key, coalesce(counts ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.counts) e)),
    sums = json_patch(sums, (SELECT json_group_object(e.key, coalesce(sums ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.sums) e));
  DELETE FROM record_totals WHERE records = 0 AND object_id = OLD.object_id AND field = OLD.field AND value = OLD.value
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = OLD.record_id)
    AND NOT EXISTS (SELECT 1 FROM json_each(counts) WHERE value <> 0);
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT w.workspace_id, NEW.object_id, NEW.field, NEW.value, 1, m.counts, m.sums
  FROM record_workspaces w, (SELECT json_group_object(k, 1) AS counts, json_group_object(k, 1 * v) AS sums
    FROM (SELECT field AS k, value AS v FROM record_index
        WHERE record_id = NEW.record_id AND field <> NEW.field AND live = 1 AND role & 2
          AND typeof(value) IN ('integer', 'real')
      UNION ALL SELECT NEW.field, NEW.value
      WHERE (NEW.live = 1 AND NEW.role & 2
        AND typeof(NEW.value) IN ('integer', 'real')))) m
  WHERE NEW.live = 1 AND NEW.role & 1 AND NEW.value IS NOT NULL AND w.record_id = NEW.record_id
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records,
    counts = json_patch(counts, (SELECT json_group_object(e.key, coalesce(counts ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.counts) e)),
    sums = json_patch(sums, (SELECT json_group_object(e.key, coalesce(sums ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.sums) e));
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT w.workspace_id, g.object_id, g.field, g.value, 0, json_object(NEW.field, d.n), json_object(NEW.field, d.s)
  FROM record_workspaces w,
    (SELECT CASE WHEN (NEW.live = 1 AND NEW.role & 2
        AND typeof(NEW.value) IN ('integer', 'real'))
        THEN 1 ELSE 0 END
      - CASE WHEN (OLD.live = 1 AND OLD.role & 2
        AND typeof(OLD.value) IN ('integer', 'real'))
        THEN 1 ELSE 0 END AS n,
      CASE WHEN (NEW.live = 1 AND NEW.role & 2
        AND typeof(NEW.value) IN ('integer', 'real'))
        THEN NEW.value ELSE 0 END
      - CASE WHEN (OLD.live = 1 AND OLD.role & 2
        AND typeof(OLD.value) IN ('integer', 'real'))
        THEN OLD.value ELSE 0 END AS s) d,
    (SELECT object_id, field, value FROM record_index
      WHERE record_id = NEW.record_id AND field <> NEW.field AND live = 1 AND role & 1 AND value IS NOT NULL
      UNION ALL SELECT NEW.object_id, '', '') g
  WHERE w.record_id = NEW.record_id AND (d.n <> 0 OR d.s <> 0)
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records,
    counts = json_patch(counts, (SELECT json_group_object(e.key, coalesce(counts ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.counts) e)),
    sums = json_patch(sums, (SELECT json_group_object(e.key, coalesce(sums ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.sums) e));
  DELETE FROM record_totals WHERE records = 0 AND object_id = NEW.object_id AND field = '' AND value = ''
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = NEW.record_id)
    AND NOT EXISTS (SELECT 1 FROM json_each(counts) WHERE value <> 0);
END;
-- 4. Sharing a record with a workspace puts it in that workspace's groups and object row;
-- unsharing takes it out. Deleting or restoring it counts it in or out of its object's row (its
-- index rows, whose `live` changes, do the rest).
CREATE TRIGGER record_totals_on_share AFTER INSERT ON record_workspaces
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.record_id / 68719476736 + 1)
  AND NOT EXISTS (SELECT 1 FROM departures WHERE tenant_id = NEW.record_id / 68719476736 + 1)
BEGIN
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT NEW.workspace_id, g.object_id, g.field, g.value, g.records, m.counts, m.sums
  FROM (SELECT object_id, field, value, 1 AS records FROM record_index
      WHERE record_id = NEW.record_id AND live = 1 AND role & 1 AND value IS NOT NULL
      UNION ALL SELECT object_id, '', '', 1 - deleted FROM records WHERE id = NEW.record_id) g,
    (SELECT json_group_object(field, 1) AS counts, json_group_object(field, value) AS sums FROM record_index
      WHERE record_id = NEW.record_id AND live = 1 AND role & 2 AND typeof(value) IN ('integer', 'real')) m
  WHERE true
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records,
    counts = json_patch(counts, (SELECT json_group_object(e.key, coalesce(counts ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.counts) e)),
    sums = json_patch(sums, (SELECT json_group_object(e.key, coalesce(sums ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.sums) e));
  DELETE FROM record_totals WHERE workspace_id = NEW.workspace_id AND field = '' AND value = '' AND records = 0
    AND object_id = (SELECT object_id FROM records WHERE id = NEW.record_id)
    AND NOT EXISTS (SELECT 1 FROM json_each(counts) WHERE value <> 0);
END;

CREATE TRIGGER record_totals_on_unshare AFTER DELETE ON record_workspaces
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = OLD.record_id / 68719476736 + 1)
  AND NOT EXISTS (SELECT 1 FROM departures WHERE tenant_id = OLD.record_id / 68719476736 + 1)
BEGIN
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT OLD.workspace_id, g.object_id, g.field, g.value, -g.records, m.counts, m.sums
  FROM (SELECT object_id, field, value, 1 AS records FROM record_index
      WHERE record_id = OLD.record_id AND live = 1 AND role & 1 AND value IS NOT NULL
      UNION ALL SELECT object_id, '', '', 1 - deleted FROM records WHERE id = OLD.record_id) g,
    (SELECT json_group_object(field, -1) AS counts, json_group_object(field, -value) AS sums FROM record_index
      WHERE record_id = OLD.record_id AND live = 1 AND role & 2 AND typeof(value) IN ('integer', 'real')) m
  WHERE true
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records,
    counts = json_patch(counts, (SELECT json_group_object(e.key, coalesce(counts ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.counts) e)),
    sums = json_patch(sums, (SELECT json_group_object(e.key, coalesce(sums ->> ('$.' || e.key), 0) + e.value)
      FROM json_each(excluded.sums) e));
  DELETE FROM record_totals WHERE workspace_id = OLD.workspace_id AND records = 0
    AND (object_id, field, value) IN (SELECT object_id, field, value FROM record_index WHERE record_id = OLD.record_id
      UNION ALL SELECT object_id, '', '' FROM records WHERE id = OLD.record_id)
    AND NOT EXISTS (SELECT 1 FROM json_each(counts) WHERE value <> 0);
END;

CREATE TRIGGER record_totals_on_delete AFTER UPDATE OF deleted ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND NOT EXISTS (SELECT 1 FROM departures WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.deleted IS NOT OLD.deleted)
BEGIN
  INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
  SELECT workspace_id, NEW.object_id, '', '', OLD.deleted - NEW.deleted, '{}', '{}' FROM record_workspaces
  WHERE record_id = NEW.id
  ON CONFLICT (workspace_id, object_id, field, value) DO UPDATE SET records = records + excluded.records;
  DELETE FROM record_totals WHERE object_id = NEW.object_id AND field = '' AND value = '' AND records = 0
    AND workspace_id IN (SELECT workspace_id FROM record_workspaces WHERE record_id = NEW.id)
    AND NOT EXISTS (SELECT 1 FROM json_each(counts) WHERE value <> 0);
END;

-- 5. A tenant's totals move with it, as its other rows do.
CREATE TRIGGER record_totals_moving_insert AFTER INSERT ON record_totals
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (NEW.workspace_id / 68719476736 + 1, 'record_totals',
    json_array(NEW.workspace_id, NEW.object_id, NEW.field, NEW.value));
END;
CREATE TRIGGER record_totals_moving_update AFTER UPDATE ON record_totals
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = NEW.workspace_id / 68719476736 + 1)
BEGIN
  SELECT RAISE(ABORT, 'tenant_not_here') FROM departures
  WHERE tenant_id = NEW.workspace_id / 68719476736 + 1
    AND state IN ('switching', 'moved');
  INSERT INTO copy_log (tenant_id, tbl, key)
  SELECT NEW.workspace_id / 68719476736 + 1, 'record_totals', k FROM (
    SELECT json_array(OLD.workspace_id, OLD.object_id, OLD.field, OLD.value) AS k
    UNION SELECT json_array(NEW.workspace_id, NEW.object_id, NEW.field, NEW.value));
END;
CREATE TRIGGER record_totals_moving_delete AFTER DELETE ON record_totals
WHEN EXISTS (SELECT 1 FROM copying WHERE tenant_id = OLD.workspace_id / 68719476736 + 1 AND state = 'copying')
BEGIN
  INSERT INTO copy_log (tenant_id, tbl, key)
  VALUES (OLD.workspace_id / 68719476736 + 1, 'record_totals',
    json_array(OLD.workspace_id, OLD.object_id, OLD.field, OLD.value));
END;

-- 6. The totals of the records already written.
INSERT INTO record_totals (workspace_id, object_id, field, value, records, counts, sums)
SELECT w.workspace_id, g.object_id, g.field, g.value, count(*), '{}', '{}'
FROM record_index g JOIN record_workspaces w ON w.record_id = g.record_id
WHERE g.live = 1 AND g.role & 1 AND g.value IS NOT NULL
GROUP BY w.workspace_id, g.object_id, g.field, g.value
UNION ALL
SELECT w.workspace_id, r.object_id, '', '', count(*), '{}', '{}'
FROM records r JOIN record_workspaces w ON w.record_id = r.id
WHERE r.deleted = 0
GROUP BY w.workspace_id, r.object_id;

UPDATE record_totals SET
  counts = (SELECT json_group_object(k, n) FROM (SELECT m.field AS k, count(*) AS n
    FROM record_index g JOIN record_workspaces w ON w.record_id = g.record_id
      JOIN record_index m ON m.record_id = g.record_id AND m.live = 1 AND m.role & 2
        AND typeof(m.value) IN ('integer', 'real')
    WHERE g.field = record_totals.field AND g.value = record_totals.value AND g.object_id = record_totals.object_id
      AND g.live = 1 AND g.role & 1 AND w.workspace_id = record_totals.workspace_id
    GROUP BY m.field)),
  sums = (SELECT json_group_object(k, n) FROM (SELECT m.field AS k, sum(m.value) AS n
    FROM record_index g JOIN record_workspaces w ON w.record_id = g.record_id
      JOIN record_index m ON m.record_id = g.record_id AND m.live = 1 AND m.role & 2
        AND typeof(m.value) IN ('integer', 'real')
    WHERE g.field = record_totals.field AND g.value = record_totals.value AND g.object_id = record_totals.object_id
      AND g.live = 1 AND g.role & 1 AND w.workspace_id = record_totals.workspace_id
    GROUP BY m.field))
WHERE field <> '';

UPDATE record_totals SET
  counts = (SELECT json_group_object(k, n) FROM (SELECT m.field AS k, count(*) AS n
    FROM record_workspaces w JOIN record_index m ON m.record_id = w.record_id AND m.live = 1 AND m.role & 2
      AND typeof(m.value) IN ('integer', 'real')
    WHERE m.object_id = record_totals.object_id AND w.workspace_id = record_totals.workspace_id
    GROUP BY m.field)),
  sums = (SELECT json_group_object(k, n) FROM (SELECT m.field AS k, sum(m.value) AS n
    FROM record_workspaces w JOIN record_index m ON m.record_id = w.record_id AND m.live = 1 AND m.role & 2
      AND typeof(m.value) IN ('integer', 'real')
    WHERE m.object_id = record_totals.object_id AND w.workspace_id = record_totals.workspace_id
    GROUP BY m.field))
WHERE field = '';
