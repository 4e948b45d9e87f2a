import type { RecordOut } from '../schemas/record.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { tenantOfId } from '../domain/tenant.ts';
import { FORMULAS_BUILD } from './record-index.ts';
import type { D1 } from './sessions.ts';
import { OBJECTS, RECORD_COLUMNS, recordsOf, toObjectDef, type ObjectRow, type RecordReadRow } from './store.ts';

/**
 * The SQL of computing an object's formulas for the records written before the formulas were
 * (its row in `index_builds` under the field `=formulas`): what a chunk reads, and what moves the
 * computation on in the chunk's own transaction.
 */

/** Records a chunk reads at most; fewer when they hold more than FORMULA_CHUNK_BYTES. */
export const FORMULA_CHUNK = 50;
const FORMULA_CHUNK_BYTES = 4_000_000;

/**
 * The computation due for an object: where it is, when its pass over the records began, and
 * when the object's current definition was written.
 */
export interface FormulaBuild {
  after: number;
  startedAt: number;
  definedAt: number;
}

const BUILD = `SELECT b.after_record_id AS after, b.started_at AS startedAt, v.created_at AS definedAt
  FROM index_builds b JOIN objects o ON o.id = b.object_id
    JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE b.object_id = ?1 AND b.field = '${FORMULAS_BUILD}'`;
// ?1 the object, ?2 the position: the next records by id, as many as fit the bytes (the first always).
const CHUNK = `SELECT ${RECORD_COLUMNS} FROM records r WHERE r.id IN (SELECT id FROM (SELECT id,
    coalesce(sum(octet_length(field_values)) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
      AS before
    FROM records WHERE object_id = ?1 AND id > ?2 ORDER BY id LIMIT ${FORMULA_CHUNK})
  WHERE before <= ${FORMULA_CHUNK_BYTES}) ORDER BY r.id`;
const AT = `object_id = ?1 AND field = '${FORMULAS_BUILD}' AND after_record_id = ?2`;

/**
 * The object's current definition, its computation due (if any) and its next chunk of records
 * (none while a pass planned to begin after `now` waits).
 */
export async function formulaChunk(
  db: D1,
  objectId: number,
  now: number,
): Promise<{ def: ObjectDef; build: FormulaBuild; records: RecordOut[] } | undefined> {
  const [objects, builds] = await db.batch([
    db.prepare(OBJECTS(tenantOfId(objectId))).bind(JSON.stringify([objectId])),
    db.prepare(BUILD).bind(objectId),
  ]);
  const row = objects?.results[0] as ObjectRow | undefined;
  const build = builds?.results[0] as FormulaBuild | undefined;
  if (row === undefined || build === undefined) return undefined;
  if (build.startedAt > now) return { def: toObjectDef(row), build, records: [] };
  const read = await db.prepare(CHUNK).bind(objectId, build.after).all<RecordReadRow>();
  return { def: toObjectDef(row), build, records: recordsOf(read.results) };
}

/**
 * What moves the computation from `build` on past `last` (the chunk's last record), ends it
 * (`done`), or starts another pass from the first record at `again.at`. Each changes nothing when
 * the computation moved meanwhile (a definition restarted it, or another step ran).
 */
export function formulaProgress(
  db: D1,
  objectId: number,
  build: FormulaBuild,
  next: { last: number } | { again: number } | 'done',
): D1PreparedStatement {
  if (next === 'done') return db.prepare(`DELETE FROM index_builds WHERE ${AT}`).bind(objectId, build.after);
  if ('again' in next)
    return db
      .prepare(`UPDATE index_builds SET after_record_id = -1, started_at = ?3 WHERE ${AT}`)
      .bind(objectId, build.after, next.again);
  return db.prepare(`UPDATE index_builds SET after_record_id = ?3 WHERE ${AT}`).bind(objectId, build.after, next.last);
}
