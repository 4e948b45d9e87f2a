import type { Context } from '../context.ts';
import type { Settled } from '../core/settle.ts';
import { recordAccess } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { applyPatch, patchProblems } from '../domain/patch.ts';
import { busy, outcomeUnknown, rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import { duplicateProblems, fieldValueDuplicates, parseBatch, pointer } from '../schemas/parse.ts';
import { PatchItem, type PatchItemIn, type RecordOut } from '../schemas/record.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import { sleep } from '../storage/retry.ts';
import { AlreadyCommitted, batchAnswer, VersionConflict } from '../storage/writes.ts';
import { CALL_DEADLINE_MS, TURN_TIMEOUT_MS } from '../turns.ts';
import { claimKey, holding, wellShaped, type KeyRequest, type Written } from './idempotent.ts';
import { turnInObject } from './objects.ts';

export interface PatchBatchInput {
  keyHash: string;
  /** Present for SPEC 4.3, absent for 4.4. */
  workspaceId: number | undefined;
  body: Settled<unknown>;
  idempotency: KeyRequest;
}

/**
 * SPEC 4.3 / 4.4, all or nothing (CONTRACT §7, §8): one D1 read decides every element; then every
 * record's object gives the batch its turn, in parallel, handing over a newer state if it wrote one;
 * the Worker computes every new state and commits them in one D1 batch guarded by versions (the
 * unchanged elements too, so every answer is the state at the commit). If any record moved on
 * meanwhile (another batch, a patch), nothing was written: re-read, recompute and commit again,
 * for up to 10 seconds. Batches never hold an object, so they cannot deadlock.
 */
export async function patchBatch(context: Context, input: PatchBatchInput, writeId: string = crypto.randomUUID()): Promise<Written<RecordOut[]>> {
  const arrival = Date.now();
  const { recall, env, meter } = context;
  const parsed = input.body.ok ? parseBatch(PatchItem, input.body.value, batchDuplicates) : undefined;
  const ids = parsed?.ok === true ? parsed.value.map((item) => item.id) : [];
  const { caller, records, objects } = await recall.recordContext(input.keyHash, ids);
  if (caller === undefined) throw unauthorized();
  const items = wellShaped(input.body, parsed, input.idempotency);
  const held = await claimKey(context, input.idempotency, caller.userId, items);
  if ('replay' in held) return held;

  return holding(context, held.claim, async () => {
    const problems = items.flatMap((item, i) => {
      const record = records.get(item.id);
      const access = record ? recordAccess(caller, record.sharedWorkspaceIds, input.workspaceId) : 'none';
      return patchProblems(record, access, record && objects.get(record.objectId), item, pointer('', i));
    });
    if (problems.length > 0) throw rejected(problems);

    const read = items.map((item) => records.get(item.id) as RecordOut);
    const turnsBy = arrival + CALL_DEADLINE_MS;
    const turns = await Promise.all(read.map((record) => meter.durable(() => turnInObject(env, record.id, record.version, turnsBy))));
    if (turns.some((turn) => !turn.granted)) throw busy();
    const states = new Map(read.map((record, i) => [record.id, turns[i]?.newer ?? record]));
    return { value: await commit(context, items, states, objects, caller.userId, held.claim, writeId, arrival + TURN_TIMEOUT_MS) };
  });
}

function batchDuplicates(items: readonly unknown[]): InputProblem[] {
  return [...duplicateProblems(items, 'id', ''), ...items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i)))];
}

/** Applies every element on the newest states and writes them all in one guarded D1 batch. */
async function commit(
  { store, writes }: Context,
  items: readonly PatchItemIn[],
  states: Map<number, RecordOut>,
  objects: ReadonlyMap<number, ObjectDef>,
  userId: number,
  claim: KeyClaim | undefined,
  writeId: string,
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
    const answered = results.map(({ applied }) => (applied.ok ? applied.record : (undefined as never)));
    const changed = results.flatMap(({ base, applied }) => (applied.ok && applied.changed ? [{ base, record: applied.record }] : []));
    const statements = [
      ...writes.batchWrites(
        changed.map(({ record }) => ({ type: 'updated', record, writeId: `${writeId}/${record.id}` })),
        results.map(({ base, applied }) => (applied.ok && applied.changed ? { base, record: applied.record } : { base })),
      ),
      ...(claim === undefined ? [] : [writes.answer(claim, { status: 200, headers: { 'Content-Type': 'application/json' }, body: batchAnswer(answered.map((r) => JSON.stringify(r))) }, now)]),
    ];
    try {
      await writes.commit(statements, deadline);
      return answered;
    } catch (error) {
      // A coordinator that restarted ran this batch again after it committed (near.ts).
      if (error instanceof AlreadyCommitted) throw outcomeUnknown();
      if (!(error instanceof VersionConflict)) throw error;
      if (Date.now() >= deadline) throw busy();
      // Lost to a concurrent write: a short jittered pause keeps retries from meeting again.
      await sleep(Math.random() * Math.min(50, 2 * attempt));
      for (const [id, record] of await store.getRecords(items.map((item) => item.id))) states.set(id, record);
    }
  }
}
