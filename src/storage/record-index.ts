import type { RecordPlace } from '../domain/access.ts';
import { foldCase } from '../core/fold.ts';
import type { FieldDefinitionIn } from '../schemas/admin.ts';
import type { D1 } from './sessions.ts';

/**
 * The index of indexed and unique fields (`record_index`): one row per record and field, with a
 * comparable `value` and, for a unique field of a live record, a `unique_key` that a unique SQL
 * index keeps unique per object and field. Triggers on `records` keep it in step with every
 * write of a record in that write's own transaction (see the migrations); this file holds what
 * else reads or rebuilds it.
 */

/** The build (a row of `index_builds`) that computes an object's formulas for its records: no field is so named. */
export const FORMULAS_BUILD = '=formulas';
/** The build that computes an object's new or changed rollups for its records. */
export const ROLLUPS_BUILD = '=rollups';

/**
 * A field value as the index compares it, from a `json_each` row `e` of a record's field values
 * of a field of type `f.type`: the value itself (a boolean as 1 or 0), a date-time as epoch
 * milliseconds (a leap second counts as the next second). The triggers use the same expression.
 */
export const INDEX_VALUE = `CASE f.type WHEN 'datetime' THEN CAST(round(1000 * coalesce(
    unixepoch(upper(e.value ->> '$.value'), 'subsec'),
    unixepoch(upper(substr(e.value ->> '$.value', 1, 17) || '59' || substr(e.value ->> '$.value', 20)), 'subsec') + 1
  )) AS INTEGER) ELSE e.value ->> '$.value' END`;

/**
 * What an indexed field of type `type` is to the totals kept per group (the triggers say the same):
 * 1 a field aggregates group by, 2 a number they add up, 3 both (an integer). A unique field (a
 * group a record) is grouped by reading the records.
 */
const totalsRole = (of = ''): string => `CASE WHEN ${of}type IN ('select', 'boolean', 'text', 'email', 'integer',
      'reference', 'date') AND NOT ${of}is_unique THEN 1 ELSE 0 END + CASE WHEN ${of}type IN ('number', 'integer')
      THEN 2 ELSE 0 END`;

/** The same for a value `?` sent by a query, of the type `t`. */
export const datetimeKey = (param: string): string => `CAST(round(1000 * coalesce(
    unixepoch(upper(${param}), 'subsec'),
    unixepoch(upper(substr(${param}, 1, 17) || '59' || substr(${param}, 20)), 'subsec') + 1)) AS INTEGER)`;

/** The indexed fields (name, type, unique) of version `current_version + delta` of object ?1, as JSON. */
const indexedOf = (delta: number): string => `(SELECT json_group_array(json_array(f.value ->> '$.name',
    coalesce(f.value ->> '$.resultType', f.value ->> '$.type'), coalesce(f.value ->> '$.unique', 0)))
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version + ${delta},
    json_each(v.fields) f
  WHERE o.id = ?1 AND (coalesce(f.value ->> '$.indexed', 0) OR coalesce(f.value ->> '$.unique', 0)))`;
// Only a version that changes which fields are indexed (or how) touches the index.
const CHANGED = `${indexedOf(0)} IS NOT ${indexedOf(-1)}`;
// Rows of fields the object's current definition no longer indexes.
const DROP = `DELETE FROM record_index WHERE object_id = ?1 AND ${CHANGED} AND role <> 4
  AND field NOT IN (SELECT name FROM index_fields WHERE object_id = ?1)`;
/** The fields (`f`) the previous version did not index as `[name, type(, unique)]` the same way. */
const NEW_IN = (compared: string): string => `NOT EXISTS (SELECT 1 FROM json_each(${indexedOf(-1)}) p
  WHERE ${compared})`;
/**
 * Index rows of field `f` for the records `c` of the object, from their values: the value, whether
 * the record is live, what the field is to the kept totals and, for a unique field of a live
 * record, its unique key (a text or email value folded: the fold the Worker stored with the
 * record, else lower(), which folds ASCII alike). The triggers do the same. Only rows that differ
 * are written, so building a record twice changes nothing.
 */
const BUILD_FROM = (records: string, fields: string, guard: string): string => `INSERT INTO record_index
    (record_id, field, object_id, value, unique_key, live, role)
  SELECT id, name, object_id, value, CASE WHEN is_unique AND NOT deleted
      THEN CASE WHEN type IN ('text', 'email') THEN coalesce(folded, lower(value)) ELSE value END END, 1 - deleted,
    ${totalsRole()}
  FROM (SELECT r.id, r.object_id, r.deleted, f.name, f.type, f.is_unique, ${INDEX_VALUE} AS value,
      r.folds ->> ('$.' || f.name) AS folded
    FROM ${records} c JOIN records r ON r.id = c.id JOIN index_fields f ON f.object_id = r.object_id AND ${fields}
      JOIN json_each(r.field_values) e ON e.value ->> '$.fieldName' = f.name)
  WHERE ${guard}
  ON CONFLICT (record_id, field) DO UPDATE SET value = excluded.value, unique_key = excluded.unique_key,
      live = excluded.live, role = excluded.role
    WHERE value IS NOT excluded.value OR unique_key IS NOT excluded.unique_key OR live IS NOT excluded.live
      OR role IS NOT excluded.role`;
// A field made unique (or unique with another type) is built at once, for every record: the
// unique index then refuses the definition's write when live records share a value.
const BUILD_UNIQUE = BUILD_FROM(
  '(SELECT id FROM records WHERE object_id = ?1)',
  `f.is_unique AND ${NEW_IN('p.value ->> 0 = f.name AND p.value ->> 1 = f.type AND p.value ->> 2')}`,
  CHANGED,
);
// A field no longer unique keeps its values but no longer claims them.
const UNCLAIM = `UPDATE record_index SET unique_key = NULL
  WHERE object_id = ?1 AND unique_key IS NOT NULL AND ${CHANGED}
    AND field NOT IN (SELECT name FROM index_fields WHERE object_id = ?1 AND is_unique)`;
// A field whose index rows stay (its type unchanged) but whose role to the kept totals changed (no
// longer unique: now grouped by) has its rows say so; the totals follow them.
const ROLES = `UPDATE record_index SET role = ${totalsRole('f.')}
  FROM index_fields f
  WHERE record_index.object_id = ?1 AND ${CHANGED} AND f.object_id = ?1 AND f.name = record_index.field
    AND record_index.role <> 4 AND record_index.role IS NOT (${totalsRole('f.')})`;
// Builds no longer due: the field is no longer indexed, or is unique (built above). The
// computation of formulas is not an index's build: it goes on.
const CANCEL = `DELETE FROM index_builds WHERE object_id = ?1 AND field NOT IN ('${FORMULAS_BUILD}', '${ROLLUPS_BUILD}')
  AND field NOT IN (SELECT name FROM index_fields WHERE object_id = ?1 AND NOT is_unique)`;
// A field newly indexed (or indexed with another type) is built later, in chunks; a build
// already under way for it starts again.
const DUE = `INSERT INTO index_builds (object_id, field, after_record_id, started_at)
  SELECT ?1, f.name, -1, ?2 FROM index_fields f
  WHERE f.object_id = ?1 AND NOT f.is_unique AND ${NEW_IN('p.value ->> 0 = f.name AND p.value ->> 1 = f.type')}
  ON CONFLICT (object_id, field) DO UPDATE SET after_record_id = -1, started_at = excluded.started_at`;

/**
 * The fields (name, type, and a formula's expression and result type) of version
 * `current_version + delta` of object ?1, as JSON, `where` some of them hold.
 */
const fieldsOf = (delta: number, where = '1'): string => `(SELECT json_group_array(json_array(f.value ->> '$.name',
    f.value ->> '$.type', f.value ->> '$.expression', f.value ->> '$.resultType'))
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version + ${delta},
    json_each(v.fields) f
  WHERE o.id = ?1 AND ${where})`;
// A version with formulas whose fields differ from the last one's (a formula new or changed, or a
// field it may read changed type) has the records written before it computed again, from the
// first; a computation under way starts again.
const FORMULAS_DUE = `INSERT INTO index_builds (object_id, field, after_record_id, started_at)
  SELECT ?1, '${FORMULAS_BUILD}', -1, ?2
  WHERE ${fieldsOf(0, `f.value ->> '$.type' = 'formula'`)} <> '[]' AND ${fieldsOf(0)} IS NOT ${fieldsOf(-1)}
  ON CONFLICT (object_id, field) DO UPDATE SET after_record_id = -1, started_at = excluded.started_at`;

/** The rollup fields (name, object, reference, op, number) of version `current_version + delta` of object ?1. */
const rollupsOf = (delta: number): string => `(SELECT json_group_array(json_array(f.value ->> '$.name',
    f.value ->> '$.from.objectId', f.value ->> '$.from.field', f.value ->> '$.op', f.value ->> '$.of'))
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version + ${delta},
    json_each(v.fields) f
  WHERE o.id = ?1 AND f.value ->> '$.type' = 'rollup')`;
// A version whose rollups differ from the last one's (one new, changed or taken out) has them
// computed again for every record of the object, in chunks; a computation under way starts again.
const ROLLUPS_DUE = `INSERT INTO index_builds (object_id, field, after_record_id, started_at)
  SELECT ?1, '${ROLLUPS_BUILD}', -1, ?2 WHERE ${rollupsOf(0)} IS NOT ${rollupsOf(-1)}
  ON CONFLICT (object_id, field) DO UPDATE SET after_record_id = -1, started_at = excluded.started_at`;

/**
 * The statements that make the index follow the object's current definition (after its new
 * version is in), in the definition's own transaction: nothing, unless the new version changes
 * which fields are indexed or unique. A field made unique is indexed here for every record; a
 * field made indexed is only noted as due, and `buildStep` builds it in chunks afterwards.
 */
export function reindexObject(db: D1, objectId: number, now: number): D1PreparedStatement[] {
  return [
    ...[DROP, BUILD_UNIQUE, UNCLAIM, ROLES, CANCEL].map((sql) => db.prepare(sql).bind(objectId)),
    db.prepare(DUE).bind(objectId, now),
    db.prepare(FORMULAS_DUE).bind(objectId, now),
    db.prepare(ROLLUPS_DUE).bind(objectId, now),
  ];
}

/** Records a chunk of an index build reads and writes at most. */
export const BUILD_CHUNK = 1000;
/**
 * Bytes of field values a chunk reads at most, besides its first record: a chunk of large
 * records holds fewer of them (each step stays short whatever the records weigh).
 */
export const BUILD_CHUNK_BYTES = 8_000_000;

// Statements of a chunk: ?1 the object, ?2 the field, ?3 the build's position (a record id).
// `octet_length` reads a value's size without reading the value.
const CHUNK = `(SELECT id FROM (SELECT id, coalesce(sum(octet_length(field_values)) OVER (ORDER BY id
      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
    FROM records WHERE object_id = ?1 AND id > ?3 ORDER BY id LIMIT ${BUILD_CHUNK})
  WHERE before <= ${BUILD_CHUNK_BYTES})`;
const AT = 'object_id = ?1 AND field = ?2 AND after_record_id = ?3';
const STEP = [
  BUILD_FROM(CHUNK, 'f.name = ?2', `EXISTS (SELECT 1 FROM index_builds WHERE ${AT})`),
  // The chunk that reaches the object's last record ends the build; any other moves its position
  // on, in the chunk's transaction.
  `DELETE FROM index_builds WHERE ${AT} AND NOT EXISTS (SELECT 1 FROM records
    WHERE object_id = ?1 AND id > coalesce((SELECT max(id) FROM ${CHUNK}), ?3))`,
  `UPDATE index_builds SET after_record_id = (SELECT max(id) FROM ${CHUNK}) WHERE ${AT}`,
];

/** An index build that is due: the object's field, and the last record id it has built. */
export interface IndexBuild {
  field: string;
  after: number;
}

/** The builds due for the object. */
export async function buildsOf(db: D1, objectId: number): Promise<IndexBuild[]> {
  const rows = await db
    .prepare('SELECT field, after_record_id AS after FROM index_builds WHERE object_id = ? ORDER BY field')
    .bind(objectId)
    .all<IndexBuild>();
  return rows.results;
}

/** The objects with index builds due. */
export async function objectsBuilding(db: D1): Promise<number[]> {
  const rows = await db.prepare('SELECT DISTINCT object_id AS id FROM index_builds').all<{ id: number }>();
  return rows.results.map((row) => row.id);
}

/**
 * One chunk of a build: the index rows of the next BUILD_CHUNK records of the object (in id
 * order; fewer when they hold more than BUILD_CHUNK_BYTES) and the build's new position, in one
 * transaction. A build that moved meanwhile (a definition started it again, or another step ran)
 * is left as it is. True when the build has more to do.
 */
export async function buildStep(db: D1, objectId: number, build: IndexBuild): Promise<boolean> {
  const results = await db.batch(STEP.map((sql) => db.prepare(sql).bind(objectId, build.field, build.after)));
  return (results[1]?.meta.changes ?? 0) === 0 && (results[2]?.meta.changes ?? 0) > 0;
}

/**
 * Records a chunk of a rollups' computation reaches at most: each reads the records referencing
 * it, so a chunk is smaller than an index build's.
 */
const ROLLUP_CHUNK = 100;
const ROLLUP_RECORDS = `(SELECT id FROM records WHERE object_id = ?1 AND id > ?2 ORDER BY id LIMIT ${ROLLUP_CHUNK})`;
const ROLLUP_AT = `EXISTS (SELECT 1 FROM index_builds WHERE object_id = ?1 AND field = '${ROLLUPS_BUILD}'
  AND after_record_id = ?2)`;
/**
 * A number as a rollup adds it up: a JSON number only (a boolean or a text kept from before the
 * field's type changed is no number), from the `json_each` row `y` of a record's values.
 */
const ROLLUP_NUMBER = `CASE WHEN json_type(y.value, '$.value') IN ('integer', 'real')
  THEN y.value ->> '$.value' END`;
/**
 * A chunk of the computation: the rows of rollups the object no longer has go; each of its
 * rollups is computed from the live records referencing each record (`record_refs`): how many
 * count (every one for a count, else those holding a number), their numbers' sum (whole numbers
 * as a whole number while a double holds it exactly), least and greatest. Then the position
 * moves on, or the computation ends, in the same transaction; a computation started again
 * meanwhile is left to its own steps.
 */
const ROLLUP_STEP = [
  `DELETE FROM record_index WHERE record_id IN ${ROLLUP_RECORDS} AND role = 4
    AND field NOT IN (SELECT name FROM rollup_fields WHERE object_id = ?1) AND ${ROLLUP_AT}`,
  `INSERT INTO record_index (record_id, field, object_id, value, unique_key, live, role, n, total)
  SELECT id, name, ?1, CASE op WHEN 'count' THEN a ->> 0 WHEN 'sum' THEN a ->> 1
      WHEN 'avg' THEN CASE WHEN a ->> 0 > 0 THEN (a ->> 1) * 1.0 / (a ->> 0) END
      WHEN 'min' THEN a ->> 2 WHEN 'max' THEN a ->> 3 END, NULL, 1, 4, a ->> 0, a ->> 1
  FROM (SELECT t.id, rf.name, rf.op, (SELECT json_array(coalesce(sum(counted), 0),
        CASE WHEN count(*) FILTER (WHERE typeof(num) = 'real') = 0 AND abs(total(num)) < 9007199254740992
          THEN CAST(total(num) AS INTEGER) ELSE total(num) END, min(num), max(num))
      FROM (SELECT num, rf.op = 'count' OR num IS NOT NULL AS counted
        FROM (SELECT (SELECT ${ROLLUP_NUMBER} FROM json_each(x.field_values) y
            WHERE y.value ->> '$.fieldName' = rf.of) AS num
          FROM record_refs r JOIN records x ON x.id = r.record_id
          WHERE r.target_id = t.id AND r.object_id = rf.from_object AND r.field = rf.from_field AND r.live = 1))) AS a
    FROM ${ROLLUP_RECORDS} t JOIN rollup_fields rf ON rf.object_id = ?1
    WHERE ${ROLLUP_AT})
  WHERE true
  ON CONFLICT (record_id, field) DO UPDATE SET value = excluded.value, unique_key = NULL, live = 1, role = 4,
    n = excluded.n, total = excluded.total`,
  `DELETE FROM index_builds WHERE object_id = ?1 AND field = '${ROLLUPS_BUILD}' AND after_record_id = ?2
    AND NOT EXISTS (SELECT 1 FROM records
      WHERE object_id = ?1 AND id > coalesce((SELECT max(id) FROM ${ROLLUP_RECORDS}), ?2))`,
  `UPDATE index_builds SET after_record_id = (SELECT max(id) FROM ${ROLLUP_RECORDS})
    WHERE object_id = ?1 AND field = '${ROLLUPS_BUILD}' AND after_record_id = ?2`,
];

/** One chunk of the computation of an object's rollups (`build`: its position). True when it has more to do. */
export async function rollupStep(db: D1, objectId: number, build: IndexBuild): Promise<boolean> {
  const results = await db.batch(ROLLUP_STEP.map((sql) => db.prepare(sql).bind(objectId, build.after)));
  return (results[2]?.meta.changes ?? 0) === 0 && (results[3]?.meta.changes ?? 0) > 0;
}

/** D1 refused a write because a unique field's value is held by another live record. */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof Error && /UNIQUE constraint failed: record_index\./.test(error.message);
}

/** Values of a unique field that several live records hold: the field and the records' ids. */
export interface Duplicate {
  field: string;
  fieldIndex: number;
  recordIds: number[];
}

/** A definition was refused: it marks fields unique whose values live records share. */
export class UniqueDuplicates extends Error {
  constructor(readonly duplicates: Duplicate[]) {
    super('unique_duplicates');
    this.name = 'UniqueDuplicates';
  }
}

const VALUES = `SELECT r.id, e.value ->> '$.fieldName' AS field, e.value ->> '$.value' AS value
  FROM records r, json_each(r.field_values) e
  WHERE r.object_id = ?1 AND r.deleted = 0 AND e.value ->> '$.fieldName' IN (SELECT value FROM json_each(?2))
  ORDER BY r.id`;

/** The values that live records of the object share, in the unique fields of `fields`. One round trip. */
export async function duplicateValues(
  db: D1,
  objectId: number,
  fields: readonly FieldDefinitionIn[],
): Promise<Duplicate[]> {
  const unique = fields.filter((field) => field.unique === true);
  const rows = await db
    .prepare(VALUES)
    .bind(objectId, JSON.stringify(unique.map((field) => field.name)))
    .all<{ id: number; field: string; value: string | number }>();
  const holders = new Map<string, number[]>();
  for (const row of rows.results) {
    const type = unique.find((field) => field.name === row.field)?.type;
    const key = type === 'text' || type === 'email' ? foldCase(String(row.value)) : String(row.value);
    const at = JSON.stringify([row.field, key]);
    holders.set(at, [...(holders.get(at) ?? []), row.id]);
  }
  return [...holders]
    .filter(([, ids]) => ids.length > 1)
    .map(([at, recordIds]) => {
      const field = (JSON.parse(at) as [string, string])[0];
      return { field, fieldIndex: fields.findIndex((f) => f.name === field), recordIds };
    });
}

/** A value a write would give a unique field: where it is in the request, and its key in the index. */
export interface UniqueClaim {
  pointer: string;
  objectId: number;
  field: string;
  key: string | number;
  /** The record that writes it (undefined for a new one): holding its own value is no clash. */
  recordId?: number;
}

const HOLDERS = `SELECT j.key AS i, ri.record_id, r.object_id, r.owned_by,
    (SELECT json_group_array(workspace_id) FROM record_workspaces
    WHERE record_id = ri.record_id) AS shared
  FROM json_each(?1) j JOIN record_index ri
  ON ri.object_id = j.value ->> 0 AND ri.field = j.value ->> 1 AND ri.unique_key = j.value ->> 2
  JOIN records r ON r.id = ri.record_id`;

/**
 * The claims that clash: with a live record holding the value, or with an earlier claim of the
 * same request. One round trip; each problem is 409 `unique_violation` at its claim's pointer,
 * naming the holding record when `canSee` says the caller may see it (by its workspaces).
 */
export async function uniqueClashes(
  db: D1,
  claims: readonly UniqueClaim[],
  canSee: (record: RecordPlace) => boolean = () => false,
): Promise<{ pointer: string; code: string; message: string; status: number }[]> {
  if (claims.length === 0) return [];
  const rows = await db
    .prepare(HOLDERS)
    .bind(JSON.stringify(claims.map((c) => [c.objectId, c.field, c.key])))
    .all<{ i: number; record_id: number; object_id: number; owned_by: number | null; shared: string }>();
  const held = new Map(rows.results.map((row) => [row.i, row.record_id]));
  const visible = new Map(
    rows.results.map((row) => [
      row.record_id,
      canSee({
        objectId: row.object_id,
        ownedBy: row.owned_by,
        sharedWorkspaceIds: JSON.parse(row.shared) as number[],
      }),
    ]),
  );
  const seen = new Set<string>();
  return claims.flatMap((claim, i) => {
    const at = JSON.stringify([claim.objectId, claim.field, claim.key]);
    const holder = held.get(i);
    const twice = seen.has(at);
    seen.add(at);
    if (!twice && (holder === undefined || holder === claim.recordId)) return [];
    return [
      {
        pointer: claim.pointer,
        code: 'unique_violation',
        message: twice
          ? 'another element of this request holds this value'
          : holder !== undefined && visible.get(holder) === true
            ? `record ${holder} holds this value`
            : 'another live record holds this value',
        status: 409,
      },
    ];
  });
}

/** The unique claims of records about to be written, by their definitions. */
export function claimsOf(
  records: readonly { objectId: number; id?: number; fieldValues: readonly { fieldName: string; value: unknown }[] }[],
  fieldsOf: (objectId: number) => readonly FieldDefinitionIn[] | undefined,
  pointerOf: (index: number, fieldName: string) => string,
): UniqueClaim[] {
  return records.flatMap((record, index) =>
    record.fieldValues.flatMap(({ fieldName, value }) => {
      const field = fieldsOf(record.objectId)?.find((f) => f.name === fieldName);
      if (field?.unique !== true || (typeof value !== 'string' && typeof value !== 'number')) return [];
      const key = field.type === 'text' || field.type === 'email' ? foldCase(String(value)) : value;
      return [
        {
          pointer: pointerOf(index, fieldName),
          objectId: record.objectId,
          field: fieldName,
          key,
          ...(record.id === undefined ? {} : { recordId: record.id }),
        },
      ];
    }),
  );
}

/** A unique clash at `pointer`, when which value clashed is not known. */
export const uniqueViolation = (at: string): { pointer: string; code: string; message: string; status: number } => ({
  pointer: at,
  code: 'unique_violation',
  message: 'another live record holds a value of a unique field',
  status: 409,
});

/** The live record holding each claim's value, in the claims' order (undefined: none). One round trip. */
export async function uniqueHolders(db: D1, claims: readonly UniqueClaim[]): Promise<(number | undefined)[]> {
  if (claims.length === 0) return [];
  const rows = await db
    .prepare(HOLDERS)
    .bind(JSON.stringify(claims.map((c) => [c.objectId, c.field, c.key])))
    .all<{ i: number; record_id: number }>();
  const held = new Map(rows.results.map((row) => [row.i, row.record_id]));
  return claims.map((_, i) => held.get(i));
}
