import type { Context } from '../context.ts';
import { recordAccess } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { applyPatch, patchProblems } from '../domain/patch.ts';
import { invalidBody, rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import { duplicateProblems, fieldValueDuplicates, parseBatch, pointer } from '../schemas/parse.ts';
import { PatchItem, type PatchItemIn, type RecordOut } from '../schemas/record.ts';
import type { Settled } from '../routes/settle.ts';
import { sleep } from '../storage/retry.ts';
import { VersionConflict, type Store } from '../storage/store.ts';
import { TURN_TIMEOUT_MS } from '../record-object.ts';
import { turnInObject } from './objects.ts';
import { busy } from './patch-one.ts';

export interface PatchBatchInput {
  keyHash: string;
  /** Present for SPEC 4.3, absent for 4.4. */
  workspaceId: number | undefined;
  body: Settled<unknown>;
}

/**
 * SPEC 4.3 / 4.4, all or nothing (CONTRACT §7, §8): one D1 read decides every element; then every
 * record's object gives the batch its turn, in parallel, handing over a newer state if it wrote one;
 * the Worker computes every new state and commits them in one D1 batch guarded by versions. If
 * any record moved on meanwhile (another batch, a patch), nothing was written: re-read, recompute
 * and commit again, for up to 10 seconds. Batches never hold an object, so they cannot deadlock.
 */
export async function patchBatch(context: Context, input: PatchBatchInput): Promise<RecordOut[]> {
  const deadline = Date.now() + TURN_TIMEOUT_MS;
  const { store, recall, env, meter } = context;
  const parsed = input.body.ok ? parseBatch(PatchItem, input.body.value, batchDuplicates) : undefined;
  const ids = parsed?.ok === true ? parsed.value.map((item) => item.id) : [];
  const { caller, records, objects } = await recall.recordContext(input.keyHash, ids);
  if (caller === undefined) throw unauthorized();
  if (!input.body.ok) throw input.body.error;
  if (parsed?.ok !== true) throw invalidBody(parsed?.problems ?? []);

  const items = parsed.value;
  const problems = items.flatMap((item, i) => {
    const record = records.get(item.id);
    const access = record ? recordAccess(caller, record.sharedWorkspaceIds, input.workspaceId) : 'none';
    return patchProblems(record, access, record && objects.get(record.objectId), item, pointer('', i));
  });
  if (problems.length > 0) throw rejected(problems);

  const read = items.map((item) => records.get(item.id) as RecordOut);
  const turns = await Promise.all(read.map((record) => meter.durable(() => turnInObject(env, record.id, record.version))));
  if (turns.some((turn) => !turn.granted)) throw busy();
  const states = new Map(read.map((record, i) => [record.id, turns[i]?.newer ?? record]));
  return commit(store, items, states, objects, caller.userId, deadline);
}

function batchDuplicates(items: readonly unknown[]): InputProblem[] {
  return [...duplicateProblems(items, 'id', ''), ...items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i)))];
}

/** Applies every element on the newest states and writes all changes in one guarded D1 batch. */
async function commit(
  store: Store,
  items: readonly PatchItemIn[],
  states: Map<number, RecordOut>,
  objects: ReadonlyMap<number, ObjectDef>,
  userId: number,
  deadline: number,
): Promise<RecordOut[]> {
  for (let attempt = 1; ; attempt++) {
    const now = Date.now();
    const results = items.map((item, i) => {
      const base = states.get(item.id) as RecordOut;
      return { base, applied: applyPatch(base, objects.get(base.objectId) as ObjectDef, item, userId, now, pointer('', i)) };
    });
    const failures = results.flatMap(({ applied }) => (applied.ok ? [] : [applied.problem]));
    if (failures.length > 0) throw rejected(failures);
    const writes = results.flatMap(({ base, applied }) =>
      applied.ok && applied.changed ? [{ record: applied.record, expectedVersion: base.version }] : [],
    );
    try {
      await store.writeRecords(writes);
      return results.flatMap(({ applied }) => (applied.ok ? [applied.record] : []));
    } catch (error) {
      if (!(error instanceof VersionConflict)) throw error;
      if (Date.now() >= deadline) throw busy();
      // Lost to a concurrent write: a short jittered pause keeps retries from meeting again.
      await sleep(Math.random() * Math.min(50, 2 * attempt));
      for (const [id, record] of await store.getRecords(items.map((item) => item.id))) states.set(id, record);
    }
  }
}
