import type { ObjectDef } from '../domain/definition.ts';
import { sameValues, sizeProblem } from '../domain/field-values.ts';
import { withFormulas } from '../domain/formula-values.ts';
import { recordName } from '../domain/name.ts';
import type { RecordOut } from '../schemas/record.ts';
import { formulaChunk, formulaProgress } from '../storage/formula-builds.ts';
import { CACHE_TTL_MS } from '../storage/isolate-cache.ts';
import { Meter } from '../storage/meter.ts';
import type { D1 } from '../storage/sessions.ts';
import { RecordWrites, type ChangeOf } from '../storage/writes.ts';
import { CALL_DEADLINE_MS } from './deadlines.ts';

/**
 * Computing a new or changed formula for the records written before it, a chunk at a time in the
 * background. Each chunk is one D1 transaction: the records whose formula values differ get them
 * as a change (a new version, in the feed, guarded by the version read, so a write that moved
 * first makes the chunk run again), and the computation's position moves on.
 *
 * A write that began before the definition changed may still compute with the old formulas (an
 * isolate trusts a definition it read for CACHE_TTL_MS), so the computation ends only with a pass
 * over every record that began once no such write can remain: one more pass, usually.
 */
export const SETTLE_MS = CACHE_TTL_MS + CALL_DEADLINE_MS;

/** What a chunk did: whether more is due, and when (epoch ms); the workspaces of the records it changed. */
export interface FormulaStep {
  next: number | undefined;
  workspaceIds: number[];
}

/** The chunk's records whose stored formula values are not what `def` computes, as their next states. */
export function recomputedStates(def: ObjectDef, records: readonly RecordOut[], now: number): ChangeOf[] {
  return records.flatMap((prev): ChangeOf[] => {
    // A deleted record too: restored, it holds what it would have held (a restore changes no value).
    if (sameValues(withFormulas(def, prev.fieldValues, prev), prev.fieldValues)) return [];
    const updatedAt = Math.max(now, prev.updatedAt);
    const fieldValues = withFormulas(def, prev.fieldValues, { createdAt: prev.createdAt, updatedAt });
    // Values a write would refuse as too large are not stored: the record keeps its own.
    if (sizeProblem(fieldValues, '') !== undefined) return [];
    const next = {
      ...prev,
      fieldValues,
      name: recordName(def, fieldValues, prev.id),
      version: prev.version + 1,
      updatedAt,
    };
    return [{ type: 'updated', prev, next }];
  });
}

/** One chunk of the object's formula computation, if one is due. */
export async function formulaStep(db: D1, objectId: number, now = Date.now()): Promise<FormulaStep> {
  const read = await formulaChunk(db, objectId, now);
  if (read === undefined) return { next: undefined, workspaceIds: [] };
  const { def, build, records } = read;
  // A pass planned to begin later must not begin sooner: when it began decides whether it is the last.
  if (build.startedAt > now) return { next: build.startedAt, workspaceIds: [] };
  const changes = recomputedStates(def, records, now);
  const last = records.at(-1)?.id;
  // The pass ends; it was the last if it began once every write of an older definition was over.
  const settledAt = build.definedAt + SETTLE_MS;
  const progress =
    last !== undefined ? { last } : build.startedAt >= settledAt ? 'done' : { again: Math.max(now, settledAt) };
  const writes = new RecordWrites(db, new Meter());
  const states = changes.map(({ prev, next }) => ({ base: prev, record: next }));
  await writes.commit(
    [...writes.batchWrites(states, changes), formulaProgress(db, objectId, build, progress)],
    [],
    now + CALL_DEADLINE_MS,
  );
  return {
    next: progress === 'done' ? undefined : 'again' in progress ? progress.again : now,
    workspaceIds: [...new Set(changes.flatMap(({ next }) => next.sharedWorkspaceIds))],
  };
}
