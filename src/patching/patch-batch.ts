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
import { leaseObject, releaseObject } from './objects.ts';
import { busy } from './patch-one.ts';

export interface PatchBatchInput {
  keyHash: string;
  /** Present for SPEC 4.3, absent for 4.4. */
  workspaceId: number | undefined;
  body: Settled<unknown>;
}

/** Parallel attempts to take every record's turn at once before falling back to id order. */
const PARALLEL_ATTEMPTS = 3;
const MAX_CONFLICTS = 4;

/**
 * SPEC 4.3 / 4.4, all or nothing (CONTRACT §7, §8): one D1 read decides every element; then the
 * batch takes the turn of every record's object (a lease), computes every new state, commits them
 * in one guarded D1 batch, and hands the objects back. Leases are released after the answer.
 */
export async function patchBatch(context: Context, input: PatchBatchInput): Promise<RecordOut[]> {
  const started = Date.now();
  const { store } = context;
  const parsed = input.body.ok ? parseBatch(PatchItem, input.body.value, batchDuplicates) : undefined;
  const ids = parsed?.ok === true ? parsed.value.map((item) => item.id) : [];
  const { caller, records, objects } = await store.recordContext(input.keyHash, ids);
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

  const snapshots = items.map((item) => records.get(item.id) as RecordOut);
  const leaseId = crypto.randomUUID();
  const states = await takeTurns(context, leaseId, snapshots, started + TURN_TIMEOUT_MS);
  const release = (committed: RecordOut[] = []) => {
    const byId = new Map(committed.map((record) => [record.id, record]));
    return Promise.all(ids.map((id) => releaseObject(context.env, id, leaseId, byId.get(id))));
  };
  let committed: RecordOut[];
  try {
    committed = await commit(store, items, states, objects, caller.userId);
  } catch (error) {
    // Hand the objects back before answering, so a retry finds them free.
    await release().catch(() => undefined);
    throw error;
  }
  // On success the objects learn the new states after the answer has left.
  context.waitUntil(release(committed));
  return committed;
}

function batchDuplicates(items: readonly unknown[]): InputProblem[] {
  return [...duplicateProblems(items, 'id', ''), ...items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i)))];
}

/**
 * Takes every record's turn. First all at once, without waiting (a busy object says so at
 * once, and the batch lets go of everything and tries again after a jittered pause); then, if
 * still contended, one by one in ascending id order, waiting: a batch then only ever waits
 * for a record while holding lower ones, so batches can never wait for each other in a circle.
 */
async function takeTurns(context: Context, leaseId: string, snapshots: readonly RecordOut[], deadline: number): Promise<Map<number, RecordOut>> {
  const { env, meter } = context;
  const lease = (snapshot: RecordOut, waitMs: number) => meter.durable(() => leaseObject(env, { leaseId, snapshot, waitMs }));
  const letGo = (ids: number[]) => Promise.all(ids.map((id) => meter.durable(() => releaseObject(env, id, leaseId))));

  for (let attempt = 1; attempt <= PARALLEL_ATTEMPTS; attempt++) {
    const answers = await Promise.all(snapshots.map((snapshot) => lease(snapshot, 0)));
    const granted = answers.flatMap((answer) => (answer.record === undefined ? [] : [answer.record]));
    if (granted.length === snapshots.length) return new Map(granted.map((record) => [record.id, record]));
    await letGo(granted.map((record) => record.id));
    await sleep(Math.random() * 10 * 2 ** attempt);
  }

  const held = new Map<number, RecordOut>();
  for (const snapshot of [...snapshots].sort((a, b) => a.id - b.id)) {
    const remaining = deadline - Date.now();
    const answer = remaining > 0 ? await lease(snapshot, remaining) : { record: undefined };
    if (answer.record === undefined) {
      await letGo([...held.keys()]);
      throw busy();
    }
    held.set(snapshot.id, answer.record);
  }
  return held;
}

/**
 * Applies every element on the state its object handed over and writes all changes in one D1
 * batch guarded by versions. If a record moved on anyway (an expired lease, a twin object),
 * nothing was written: re-read and recompute.
 */
async function commit(
  store: Store,
  items: readonly PatchItemIn[],
  states: Map<number, RecordOut>,
  objects: ReadonlyMap<number, ObjectDef>,
  userId: number,
): Promise<RecordOut[]> {
  for (let conflicts = 0; ; conflicts++) {
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
      if (conflicts + 1 >= MAX_CONFLICTS) throw busy();
      const fresh = await store.getRecords(items.map((item) => item.id));
      for (const [id, record] of fresh) states.set(id, record);
    }
  }
}
