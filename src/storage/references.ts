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
  error instanceof Error && /\binvalid_reference\b/.test(error.message);

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

const REFUSED = `SELECT j.key AS i FROM json_each(?1) j WHERE NOT EXISTS (SELECT 1 FROM records x
  WHERE x.id = j.value ->> 0 AND x.object_id = j.value ->> 1 AND x.deleted = 0 AND EXISTS (SELECT 1
    FROM record_workspaces w JOIN memberships m ON m.workspace_id = w.workspace_id AND m.user_id = ?2
    WHERE w.record_id = x.id))`;

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
            .bind(JSON.stringify(claims.map((c) => [c.id, c.target])), userId)
            .all<{ i: number }>()
        ).results;
  const refused = rows.flatMap(({ i }) => {
    const claim = claims[i];
    return claim === undefined ? [] : [invalidReference(claim.pointer, claim.target)];
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

const RESTRICTING = `FROM record_refs r JOIN records s ON s.id = r.record_id AND s.deleted = 0 AND s.id <> ?1
  JOIN reference_fields f ON f.object_id = r.object_id AND f.name = r.field AND f.on_delete = 'restrict'
  WHERE r.target_id = ?1`;
const READABLE = `EXISTS (SELECT 1 FROM record_workspaces w
  WHERE w.record_id = r.record_id AND w.workspace_id IN (SELECT value FROM json_each(?2)))`;

/**
 * Why record `id` may not be deleted: how many live records reference it by a restricting field
 * (up to REFERENCING_COUNT + 1), and the first `limit` of them that a reader of `workspaceIds` can read.
 */
export async function restricting(
  db: D1,
  id: number,
  workspaceIds: readonly number[],
  limit: number,
): Promise<{ count: number; readable: Referencing[] }> {
  const [count, readable] = await db.batch([
    db
      .prepare(`SELECT count(*) AS n FROM (SELECT DISTINCT r.record_id ${RESTRICTING} LIMIT ${REFERENCING_COUNT + 1})`)
      .bind(id),
    db
      .prepare(
        `SELECT r.record_id AS recordId, r.object_id AS objectId, group_concat(r.field, ', ') AS field, s.name
         ${RESTRICTING} AND ${READABLE}
         GROUP BY r.record_id ORDER BY r.object_id, r.record_id LIMIT ?3`,
      )
      .bind(id, JSON.stringify(workspaceIds), limit),
  ]);
  return {
    count: (count?.results[0] as { n: number } | undefined)?.n ?? 0,
    readable: (readable?.results ?? []) as Referencing[],
  };
}

/** Where a page of referencing records continues: after this (objectId, field, recordId). */
export type ReferencingAfter = [number, string, number];

/**
 * Live records referencing record `id` by a reference field of their object's current definition
 * (a field taken out keeps its values, which reference nothing any more) that a reader of
 * `workspaceIds` can read, by (objectId, field, recordId), after `after`, at most `limit`: a walk
 * of the index by target.
 */
export async function referencingPage(
  db: D1,
  meter: Meter,
  id: number,
  workspaceIds: readonly number[],
  after: ReferencingAfter | undefined,
  limit: number,
): Promise<Referencing[]> {
  const statement = db
    .prepare(
      `SELECT r.record_id AS recordId, r.object_id AS objectId, r.field, s.name
       FROM record_refs r JOIN records s ON s.id = r.record_id AND s.deleted = 0
       WHERE r.target_id = ?1 AND (r.object_id, r.field, r.record_id) > (?3, ?4, ?5) AND ${READABLE}
         AND EXISTS (SELECT 1 FROM reference_fields f WHERE f.object_id = r.object_id AND f.name = r.field)
       ORDER BY r.object_id, r.field, r.record_id LIMIT ?6`,
    )
    .bind(id, JSON.stringify(workspaceIds), after?.[0] ?? -1, after?.[1] ?? '', after?.[2] ?? -1, limit);
  return (await meter.d1(() => statement.all<Referencing>())).results;
}

/** The records of `ids` with the workspaces each is shared with: what a page's expand shows. One read. */
export async function referencedRows(
  db: D1,
  meter: Meter,
  ids: readonly number[],
): Promise<Map<number, ReferencedRow>> {
  if (ids.length === 0) return new Map();
  const statement = db
    .prepare(
      `SELECT x.id, x.object_id, x.name, x.deleted,
         (SELECT json_group_array(workspace_id) FROM record_workspaces WHERE record_id = x.id) AS shared
       FROM records x WHERE x.id IN (SELECT value FROM json_each(?1))`,
    )
    .bind(JSON.stringify(ids));
  const rows = await meter.d1(() =>
    statement.all<{ id: number; object_id: number; name: string; deleted: number; shared: string }>(),
  );
  return new Map(
    rows.results.map((row) => [
      row.id,
      {
        id: row.id,
        objectId: row.object_id,
        name: row.name,
        deleted: row.deleted === 1,
        sharedWorkspaceIds: JSON.parse(row.shared) as number[],
      },
    ]),
  );
}
