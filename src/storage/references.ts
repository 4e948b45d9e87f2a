import { ROLE_READS } from './store.ts';
import type { InputProblem } from '../core/problem.ts';
import type { ReferenceClaim, ReferencedRow } from '../domain/references.ts';
import type { Meter } from './meter.ts';
import type { D1 } from './sessions.ts';

/**
 * References between records (`record_refs`, kept by triggers in each write's own transaction,
 * see the migrations): D1 refuses a write that references a record the writer may not reference
 * (`invalid_reference`) and the delete of a record that live records reference
 * (`record_referenced`). This file reads what a refusal's answer names, the records that
 * reference one, and the records a page expands.
 */

/** D1 refused a write: a reference it adds names no live record of its target that the writer can read. */
export const isInvalidReference = (error: unknown): boolean =>
  error instanceof Error && /\binvalid_(reference|file)\b/.test(error.message);

/** D1 refused a delete: live records reference the record by a field that restricts its deletion. */
export const isRecordReferenced = (error: unknown): boolean =>
  error instanceof Error && /\brecord_referenced\b/.test(error.message);

const message = (target: number): string => `expected the id of a live record of object ${target} that you can read`;

/** The problem of a reference that is refused, the same whatever the reason (no answer tells which). */
export const invalidReference = (at: string, target?: number): InputProblem => ({
  pointer: at,
  code: 'invalid_reference',
  message: target === undefined ? 'a reference names no live record that you can read' : message(target),
  status: 422,
});

// As the triggers decide (a record of an object the writer's role lists as readable, owned by them
// for `own` rows): a reference refused for a record the role hides is answered as one to none.
// A file (`[file]`) as the file triggers decide a file newly written into a record.
const REFUSED = `SELECT j.key AS i FROM json_each(?1) j WHERE CASE WHEN json_array_length(j.value) = 1
  THEN NOT EXISTS (SELECT 1 FROM files f WHERE f.id = j.value ->> '$[0].id' AND f.name = j.value ->> '$[0].name'
    AND f.size = j.value ->> '$[0].size' AND f.content_type = j.value ->> '$[0].contentType'
    AND f.record_id IS NULL AND f.created_by = ?2)
  ELSE NOT EXISTS (SELECT 1 FROM records x
  WHERE x.id = j.value ->> 0 AND x.object_id = j.value ->> 1 AND x.deleted = 0 AND EXISTS (SELECT 1
    FROM record_workspaces w JOIN memberships m ON m.workspace_id = w.workspace_id AND m.user_id = ?2
    LEFT JOIN roles ro ON ro.id = m.role_id
    WHERE w.record_id = x.id AND ${ROLE_READS('ro.objects', 'm.user_id', 'x')})) END`;

/** The problem of a file a write names that it may not: the same whatever the reason. */
export const invalidFile = (at: string): InputProblem => ({
  pointer: at,
  code: 'invalid_file',
  message: 'expected a file of this tenant as its upload answered it, uploaded by you and held by no other record',
  status: 422,
});

/**
 * The claims D1 would refuse now, each a 422 `invalid_reference` at its pointer (one round trip):
 * what a refused write's answer says. Empty claims, or none refused (a target restored since):
 * one problem at `fallback`.
 */
export async function referenceProblems(
  db: D1,
  claims: readonly ReferenceClaim[],
  userId: number,
  fallback: string,
): Promise<InputProblem[]> {
  const rows =
    claims.length === 0
      ? []
      : (
          await db
            .prepare(REFUSED)
            .bind(JSON.stringify(claims.map((c) => (c.file === undefined ? [c.id, c.target] : [c.file]))), userId)
            .all<{ i: number }>()
        ).results;
  const refused = rows.flatMap(({ i }) => {
    const claim = claims[i];
    if (claim === undefined) return [];
    return [claim.file === undefined ? invalidReference(claim.pointer, claim.target) : invalidFile(claim.pointer)];
  });
  return refused.length > 0 ? refused : [invalidReference(fallback)];
}

/** A live record that references another, as lists of referencing records show it. */
export interface Referencing {
  recordId: number;
  objectId: number;
  field: string;
  name: string;
}

/** The referencing records a refused delete names at most. */
export const REFERENCING_SHOWN = 20;

/** The count of restricting references a refused delete reports at most (past it, "at least"). */
export const REFERENCING_COUNT = 10_000;

/** The workspaces the referencing record `s` is shared with (JSON): where a role decides on it. */
const SHARED_OF_S = '(SELECT json_group_array(workspace_id) FROM record_workspaces WHERE record_id = s.id) AS shared';

/** The object of the record `?1`: the target of the reference fields that may reference it. */
const TARGET_OBJECT = '(SELECT object_id FROM records WHERE id = ?1)';

/**
 * The live references of the record `?1` that a reader of the workspaces of the JSON array `?2`
 * can read, as rows of `e.value` = `[objectId, field, recordId]`: in each of those workspaces, at
 * most `?3` of its references by `(objectId, field, recordId)` after `after`, by the fields `fields`
 * (a condition on `t`, the reference field of `x`'s object) holds. Each workspace's walk reads its
 * own entries only, so records the reader cannot read, and deleted ones, are never read.
 */
function readableWalk(fields: string, after: string): string {
  return `json_each(?2) w, json_each((SELECT json_group_array(json_array(x.object_id, x.field, x.record_id)) FROM (
      SELECT x.object_id, x.field, x.record_id FROM record_referrers x
      WHERE x.workspace_id = w.value AND x.target_id = ?1 AND ${after}
        AND EXISTS (SELECT 1 FROM reference_targets t WHERE t.target = ${TARGET_OBJECT}
          AND t.object_id = x.object_id AND t.field = x.field AND ${fields})
      ORDER BY x.object_id, x.field, x.record_id LIMIT ?3) x)) e`;
}

/**
 * Why record `id` may not be deleted: how many live records reference it by a restricting field
 * (up to REFERENCING_COUNT + 1), and the first `limit` of them that a reader of `workspaceIds` can
 * read. The count reads those references only (the fields that restrict, then each one's live
 * references of the record); the list reads, in each workspace of the reader, at most `limit`
 * references by each restricting field.
 */
export async function restricting(
  db: D1,
  id: number,
  workspaceIds: readonly number[],
  limit: number,
): Promise<{ count: number; readable: (Referencing & Placed)[] }> {
  const [count, readable] = await db.batch([
    db
      .prepare(
        `SELECT count(*) AS n FROM (SELECT DISTINCT r.record_id FROM reference_targets t
           CROSS JOIN record_refs r ON r.target_id = ?1 AND r.live = 1 AND r.object_id = t.object_id
             AND r.field = t.field
           WHERE t.target = ${TARGET_OBJECT} AND t.on_delete = 'restrict' AND r.record_id <> ?1
           LIMIT ${REFERENCING_COUNT + 1})`,
      )
      .bind(id),
    db
      .prepare(
        `SELECT q.recordId, q.objectId, q.field, s.name, s.owned_by AS ownedBy,
           ${SHARED_OF_S} FROM (
           SELECT p.record_id AS recordId, p.object_id AS objectId,
             group_concat(p.field, ', ' ORDER BY p.field) AS field
           FROM (SELECT DISTINCT e.value ->> 0 AS object_id, e.value ->> 1 AS field, e.value ->> 2 AS record_id
             FROM ${readableWalk(`t.on_delete = 'restrict'`, 'x.record_id <> ?1')}) p
           GROUP BY p.record_id ORDER BY p.object_id, p.record_id LIMIT ?3) q
         CROSS JOIN records s ON s.id = q.recordId
         ORDER BY q.objectId, q.recordId`,
      )
      .bind(id, JSON.stringify(workspaceIds), limit),
  ]);
  return {
    count: (count?.results[0] as { n: number } | undefined)?.n ?? 0,
    readable: ((readable?.results ?? []) as (Referencing & { ownedBy: number | null; shared: string })[]).map(
      ({ shared, ...row }) => ({ ...row, sharedWorkspaceIds: JSON.parse(shared) as number[] }),
    ),
  };
}

/** Where a page of referencing records continues: after this (objectId, field, recordId). */
export type ReferencingAfter = [number, string, number];

/**
 * Live records referencing record `id` by a reference field of their object's current definition
 * (a field taken out keeps its values, which reference nothing any more) that a reader of
 * `workspaceIds` can read, by (objectId, field, recordId), after `after`, at most `limit`: in each
 * of the reader's workspaces, a walk of its references of the record, at most `limit` each.
 */
export async function referencingPage(
  db: D1,
  meter: Meter,
  id: number,
  workspaceIds: readonly number[],
  after: ReferencingAfter | undefined,
  limit: number,
  placed = false,
): Promise<(Referencing & Partial<Placed>)[]> {
  // Where each stands, for a reader whose role decides record by record (read only for them).
  const places = placed
    ? `, s.owned_by AS ownedBy,
       ${SHARED_OF_S}`
    : '';
  const statement = db
    .prepare(
      `SELECT p.object_id AS objectId, p.field, p.record_id AS recordId, s.name${places} FROM (
         SELECT DISTINCT e.value ->> 0 AS object_id, e.value ->> 1 AS field, e.value ->> 2 AS record_id
         FROM ${readableWalk('1', '(x.object_id, x.field, x.record_id) > (?4, ?5, ?6)')}
         ORDER BY 1, 2, 3 LIMIT ?3) p
       CROSS JOIN records s ON s.id = p.record_id
       ORDER BY p.object_id, p.field, p.record_id`,
    )
    .bind(id, JSON.stringify(workspaceIds), limit, after?.[0] ?? -1, after?.[1] ?? '', after?.[2] ?? -1);
  const rows = (await meter.d1(() => statement.all<Referencing & { ownedBy?: number | null; shared?: string }>()))
    .results;
  return rows.map(({ shared, ownedBy, ...row }) =>
    shared === undefined
      ? row
      : { ...row, ownedBy: ownedBy ?? null, sharedWorkspaceIds: JSON.parse(shared) as number[] },
  );
}

/** Where a referencing record stands: what a role decides on. */
export interface Placed {
  ownedBy: number | null;
  sharedWorkspaceIds: number[];
}

/**
 * The records of `ids` with the workspaces each is shared with: what a page's expand shows, and
 * with `values` the values of those fields each holds (what its lookups show). One read.
 */
export async function referencedRows(
  db: D1,
  meter: Meter,
  ids: readonly number[],
  values: readonly string[] = [],
): Promise<Map<number, ReferencedRow & { values?: Map<string, unknown> }>> {
  if (ids.length === 0) return new Map();
  const statement = db
    .prepare(
      `SELECT x.id, x.object_id, x.name, x.deleted, x.owned_by,
         (SELECT json_group_array(workspace_id) FROM record_workspaces WHERE record_id = x.id) AS shared,
         (SELECT json_group_array(json_array(e.value ->> '$.fieldName', e.value -> '$.value'))
           FROM json_each(x.field_values) e
           WHERE e.value ->> '$.fieldName' IN (SELECT value FROM json_each(?2))) AS vals
       FROM records x WHERE x.id IN (SELECT value FROM json_each(?1))`,
    )
    .bind(JSON.stringify(ids), JSON.stringify(values));
  const rows = await meter.d1(() =>
    statement.all<{
      id: number;
      object_id: number;
      name: string;
      deleted: number;
      owned_by: number | null;
      shared: string;
      vals: string;
    }>(),
  );
  return new Map(
    rows.results.map((row) => [
      row.id,
      {
        id: row.id,
        objectId: row.object_id,
        name: row.name,
        deleted: row.deleted === 1,
        ownedBy: row.owned_by,
        sharedWorkspaceIds: JSON.parse(row.shared) as number[],
        ...(values.length === 0 ? {} : { values: new Map(JSON.parse(row.vals) as [string, unknown][]) }),
      },
    ]),
  );
}
