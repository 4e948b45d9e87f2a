-- Rollup fields: a record's count, sum, average, minimum or maximum over the live records that
-- reference it by one reference field (of one object), kept in each write's own transaction
-- without a new version of the record. A record's rollup is a row of `record_index` (role 4: no
-- kept total reads it), so it is sorted and filtered by the keys the index triggers keep, and a
-- tenant's move copies it. `n` is how many referencing records count (for a count every one, else
-- those holding a number) and `total` their sum; `value` is what the field shows.
ALTER TABLE record_index ADD COLUMN n INTEGER;
ALTER TABLE record_index ADD COLUMN total ANY;

-- 1. The rollup fields of current definitions, by the reference they follow: only those of a
-- reference field that references their object (kept by every definition that changes it).
CREATE VIEW rollup_fields AS
  SELECT rt.target AS object_id, f.value ->> '$.name' AS name, f.value ->> '$.op' AS op,
    rt.object_id AS from_object, rt.field AS from_field, f.value ->> '$.of' AS of
  FROM reference_targets rt JOIN objects o ON o.id = rt.target
    JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version, json_each(v.fields) f
  WHERE f.value ->> '$.type' = 'rollup' AND f.value ->> '$.from.objectId' = rt.object_id
    AND f.value ->> '$.from.field' = rt.field;

-- 2. A record starts with its rollups empty: a count and a sum 0, the others no value.
CREATE TRIGGER rollups_of_new_record AFTER INSERT ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
BEGIN
  INSERT INTO record_index (record_id, field, object_id, value, unique_key, live, role, n, total)
  SELECT NEW.id, name, NEW.object_id, CASE WHEN op IN ('count', 'sum') THEN 0 END, NULL, 1, 4, 0, 0
  FROM rollup_fields WHERE object_id = NEW.object_id
  ON CONFLICT (record_id, field) DO NOTHING;
END;

-- 3. A referencing record written moves its part between the records it referenced and those it
-- references now: -1 for each of the old state (when live), +1 for each of the new, and a record
-- whose part did not change is left alone. Its part is a JSON number of the field `of` (a boolean
-- or a text kept from before the field's type changed is none). A count and a sum of whole numbers
-- change by the difference; a sum holding decimals is added up again when a number leaves it (a
-- difference of doubles would keep the rounding of what left), as a minimum or maximum is when
-- the value holding it leaves: from the others as they stand, and this record's new part. While the
-- object's rollups are computed again (a `=rollups` build), a record the computation has not reached
-- keeps what it holds: the computation counts it as it then stands.
CREATE TRIGGER rollups_on_insert AFTER INSERT ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND EXISTS (SELECT 1 FROM rollup_fields WHERE from_object = NEW.object_id)
  AND NEW.deleted = 0
BEGIN
  UPDATE record_index SET n = record_index.n + d.dn,
    total = CASE WHEN record_index.n + d.dn = 0 THEN 0 ELSE record_index.total + d.dt END,
    value = CASE d.op
      WHEN 'count' THEN record_index.n + d.dn
      WHEN 'sum' THEN CASE WHEN record_index.n + d.dn = 0 THEN 0 ELSE record_index.total + d.dt END
      WHEN 'avg' THEN CASE WHEN record_index.n + d.dn > 0
        THEN (record_index.total + d.dt) * 1.0 / (record_index.n + d.dn) END
      WHEN 'min' THEN CASE WHEN record_index.n + d.dn = 0 THEN NULL
        ELSE min(coalesce(record_index.value, d.lo), coalesce(d.lo, record_index.value)) END
      WHEN 'max' THEN CASE WHEN record_index.n + d.dn = 0 THEN NULL
        ELSE max(coalesce(record_index.value, d.hi), coalesce(d.hi, record_index.value)) END
    END
  FROM (SELECT c.name, c.op, c.target, sum(c.counted) AS dn, sum(coalesce(c.v, 0)) AS dt, min(c.v) AS lo,
      max(c.v) AS hi
    FROM (SELECT *, op = 'count' OR v IS NOT NULL AS counted
      FROM (SELECT rf.name, rf.op, t.value AS target,
          (SELECT CASE WHEN json_type(x.value, '$.value') IN ('integer', 'real') THEN x.value ->> '$.value' END
            FROM json_each(NEW.field_values) x WHERE x.value ->> '$.fieldName' = rf.of) AS v
        FROM rollup_fields rf JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = rf.from_field,
          json_each(e.value, '$.value') t
        WHERE rf.from_object = NEW.object_id)) c
    GROUP BY c.name, c.op, c.target) d
  WHERE record_index.record_id = d.target AND record_index.field = d.name AND record_index.role = 4
    AND NOT EXISTS (SELECT 1 FROM index_builds b WHERE b.object_id = record_index.object_id
      AND b.field = '=rollups' AND b.after_record_id < record_index.record_id);
END;

CREATE TRIGGER rollups_on_update AFTER UPDATE OF field_values, deleted ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.field_values IS NOT OLD.field_values OR NEW.deleted IS NOT OLD.deleted)
  AND EXISTS (SELECT 1 FROM rollup_fields WHERE from_object = NEW.object_id)
BEGIN
  UPDATE record_index SET n = record_index.n + d.dn, total = d.total,
    value = CASE d.op
      WHEN 'count' THEN record_index.n + d.dn
      WHEN 'sum' THEN d.total
      WHEN 'avg' THEN CASE WHEN record_index.n + d.dn > 0 THEN d.total * 1.0 / (record_index.n + d.dn) END
      WHEN 'min' THEN CASE WHEN record_index.n + d.dn = 0 THEN NULL WHEN d.relo IS NOT NULL THEN d.relo
        ELSE min(coalesce(record_index.value, d.lo), coalesce(d.lo, record_index.value)) END
      WHEN 'max' THEN CASE WHEN record_index.n + d.dn = 0 THEN NULL WHEN d.rehi IS NOT NULL THEN d.rehi
        ELSE max(coalesce(record_index.value, d.hi), coalesce(d.hi, record_index.value)) END
    END
  FROM (SELECT d0.*,
      CASE WHEN ri.n + d0.dn = 0 THEN 0
        WHEN d0.op IN ('sum', 'avg') AND d0.gone_lo IS NOT NULL
          AND (typeof(ri.total) = 'real' OR typeof(d0.gone_lo) = 'real')
        THEN (SELECT CASE WHEN count(*) FILTER (WHERE typeof(v) = 'real') = 0 AND abs(total(v)) < 9007199254740992
            THEN CAST(total(v) AS INTEGER) ELSE total(v) END FROM (
          SELECT (SELECT CASE WHEN json_type(y.value, '$.value') IN ('integer', 'real') THEN y.value ->> '$.value' END
              FROM json_each(x.field_values) y WHERE y.value ->> '$.fieldName' = d0.of) AS v
          FROM record_refs r JOIN records x ON x.id = r.record_id
          WHERE r.target_id = d0.target AND r.object_id = NEW.object_id AND r.field = d0.from_field AND r.live = 1
            AND r.record_id <> NEW.id
          UNION ALL SELECT d0.lo))
        ELSE ri.total + d0.dt END AS total,
      CASE WHEN d0.op = 'min' AND d0.gone_lo IS NOT NULL AND d0.gone_lo <= ri.value
        THEN (SELECT min(v) FROM (
          SELECT (SELECT CASE WHEN json_type(y.value, '$.value') IN ('integer', 'real') THEN y.value ->> '$.value' END
              FROM json_each(x.field_values) y WHERE y.value ->> '$.fieldName' = d0.of) AS v
          FROM record_refs r JOIN records x ON x.id = r.record_id
          WHERE r.target_id = d0.target AND r.object_id = NEW.object_id AND r.field = d0.from_field AND r.live = 1
            AND r.record_id <> NEW.id
          UNION ALL SELECT d0.lo)) END AS relo,
      CASE WHEN d0.op = 'max' AND d0.gone_hi IS NOT NULL AND d0.gone_hi >= ri.value
        THEN (SELECT max(v) FROM (
          SELECT (SELECT CASE WHEN json_type(y.value, '$.value') IN ('integer', 'real') THEN y.value ->> '$.value' END
              FROM json_each(x.field_values) y WHERE y.value ->> '$.fieldName' = d0.of) AS v
          FROM record_refs r JOIN records x ON x.id = r.record_id
          WHERE r.target_id = d0.target AND r.object_id = NEW.object_id AND r.field = d0.from_field AND r.live = 1
            AND r.record_id <> NEW.id
          UNION ALL SELECT d0.hi)) END AS rehi
    FROM (SELECT c.name, c.op, c.of, c.from_field, c.target, sum(c.sign * c.counted) AS dn,
        sum(c.sign * coalesce(c.v, 0)) AS dt,
        min(CASE WHEN c.sign = 1 THEN c.v END) AS lo, max(CASE WHEN c.sign = 1 THEN c.v END) AS hi,
        min(CASE WHEN c.sign = -1 THEN c.v END) AS gone_lo, max(CASE WHEN c.sign = -1 THEN c.v END) AS gone_hi,
        count(*) AS parts
      FROM (SELECT *, op = 'count' OR v IS NOT NULL AS counted
        FROM (SELECT rf.name, rf.op, rf.of, rf.from_field, t.value AS target, s.sign,
            (SELECT CASE WHEN json_type(x.value, '$.value') IN ('integer', 'real') THEN x.value ->> '$.value' END
              FROM json_each(s.vs) x WHERE x.value ->> '$.fieldName' = rf.of) AS v
          FROM rollup_fields rf,
            (SELECT -1 AS sign, OLD.field_values AS vs WHERE OLD.deleted = 0
              UNION ALL SELECT 1, NEW.field_values WHERE NEW.deleted = 0) s,
            json_each(s.vs) e, json_each(e.value, '$.value') t
          WHERE rf.from_object = NEW.object_id AND e.value ->> '$.fieldName' = rf.from_field)) c
      GROUP BY c.name, c.op, c.of, c.from_field, c.target) d0
      JOIN record_index ri ON ri.record_id = d0.target AND ri.field = d0.name AND ri.role = 4
    -- The same part before and after (the same number, or none, or a count's): nothing to do.
    WHERE NOT (d0.parts = 2 AND d0.dn = 0 AND (d0.op = 'count' OR d0.lo IS d0.gone_lo))) d
  WHERE record_index.record_id = d.target AND record_index.field = d.name AND record_index.role = 4
    AND NOT EXISTS (SELECT 1 FROM index_builds b WHERE b.object_id = record_index.object_id
      AND b.field = '=rollups' AND b.after_record_id < record_index.record_id);
END;

-- 4. Nothing else writes a rollup's rows but a definition (storage/record-index.ts computes a new or
-- changed rollup for every record there): the index's own upkeep leaves them alone.
DROP TRIGGER record_index_on_update;
CREATE TRIGGER record_index_on_update AFTER UPDATE OF field_values, deleted ON records
WHEN NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = NEW.id / 68719476736 + 1)
  AND (NEW.field_values IS NOT OLD.field_values OR NEW.deleted IS NOT OLD.deleted)
BEGIN
  DELETE FROM record_index WHERE record_id = NEW.id AND role <> 4 AND field IN (
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
