-- Formula fields: `{"type": "formula", "expression": …, "resultType": …}`. Their values are
-- computed by the Worker on every write and stored with the record's other values.

-- An indexed formula field is indexed as the type its expression yields.
DROP VIEW index_fields;
CREATE VIEW index_fields AS
  SELECT o.id AS object_id, f.value ->> '$.name' AS name,
    coalesce(f.value ->> '$.resultType', f.value ->> '$.type') AS type,
    coalesce(f.value ->> '$.unique', 0) AS is_unique
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version,
    json_each(v.fields) f
  WHERE coalesce(f.value ->> '$.indexed', 0) OR coalesce(f.value ->> '$.unique', 0);

-- A new or changed formula is computed for the records written before it in the background, as
-- an index is built: its progress is a row of `index_builds` whose field is `=formulas` (a name no
-- field can take), so it moves with its tenant like any build.
