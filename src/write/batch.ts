import type { Context } from '../context.ts';
import type { LedgerOutcome } from '../core/ledger.ts';
import { recordAccess, type Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { applyPatch, patchProblems } from '../domain/patch.ts';
import { referenceClaims } from '../domain/references.ts';
import { busy, rejected, unauthorized } from '../http/errors.ts';
import { pointer } from '../schemas/parse.ts';
import type { PatchItemIn, RecordOut } from '../schemas/record.ts';
import type { RecordContext } from '../storage/store.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import { claimsOf } from '../storage/record-index.ts';
import { AGAIN, recomputing } from '../storage/retry.ts';
import { VersionConflict } from '../storage/writes.ts';
import { JSON_TYPE } from './answer.ts';
import { answeredBefore } from './create.ts';
import { CALL_DEADLINE_MS, TURN_TIMEOUT_MS } from './deadlines.ts';
import { explained } from './refusals.ts';
import type { Write, WriteCall } from './write.ts';

type BatchWrite = Extract<Write, { kind: 'batch' }>;

/**
 * Patching records in a batch, all or nothing: one D1 read decides every element; then every
 * record's object gives the batch its turn, in parallel, handing over a newer state if it wrote
 * one; the new states are committed in one D1 batch guarded by versions (the unchanged
 * elements too, so every answer is the state at the commit) that starts with the batch's
 * ledger row. If any record moved on meanwhile, nothing was written: re-read, recompute and
 * commit again, for up to 10 seconds. Batches never hold an object, so they cannot deadlock.
 */

/** The caller (none: 401), the records and their definitions, read from D1 (a batch needs their state). */
export async function readForBatch(context: Context, call: WriteCall, write: BatchWrite): Promise<RecordContext> {
  const read = await context.cached.recordContext(
    call.keyHash,
    write.items.map((item) => item.id),
  );
  if (read.caller === undefined) throw unauthorized();
  return read;
}

export async function patchInTurns(
  context: Context,
  call: WriteCall,
  write: BatchWrite,
  { caller, records, objects }: RecordContext,
  claim: KeyClaim | undefined,
): Promise<RecordOut[]> {
  const arrival = Date.now();
  const { items } = write;
  if (caller === undefined) throw unauthorized();
  const problems = items.flatMap((item, i) => {
    const record = records.get(item.id);
    const access = record ? recordAccess(caller, record.sharedWorkspaceIds, write.workspaceId) : 'none';
    return patchProblems(record, access, record && objects.get(record.objectId), item, pointer('', i));
  });
  if (problems.length > 0) throw rejected(problems);

  const read = items.map((item) => records.get(item.id) as RecordOut);
  const turns = await Promise.all(
    read.map((record) => context.recordTurns.turn(record.id, record.version, arrival + CALL_DEADLINE_MS)),
  );
  if (turns.some((turn) => !turn.granted)) throw busy();
  const states = new Map(read.map((record, i) => [record.id, turns[i]?.newer ?? record]));
  const deadline = arrival + TURN_TIMEOUT_MS;
  return recomputing(
    async () => {
      const committed = await commitBatch(context, call.id, items, states, objects, caller, claim, deadline);
      if (committed !== AGAIN) return committed;
      for (const [id, record] of await context.writes.current(
        items.map((item) => item.id),
        deadline + CALL_DEADLINE_MS,
      ))
        states.set(id, record);
      return AGAIN;
    },
    { deadline, late: busy },
  );
}

/**
 * Applies every element on the newest states and writes them all in one guarded D1 batch with
 * the batch's ledger row: the records answered, or AGAIN when a record moved on meanwhile.
 */
async function commitBatch(
  context: Context,
  writeId: string,
  items: readonly PatchItemIn[],
  states: ReadonlyMap<number, RecordOut>,
  objects: ReadonlyMap<number, ObjectDef>,
  caller: Caller,
  claim: KeyClaim | undefined,
  deadline: number,
): Promise<RecordOut[] | typeof AGAIN> {
  const { userId } = caller;
  const { writes } = context;
  const now = Date.now();
  const results = items.map((item, i) => {
    const base = states.get(item.id) as RecordOut;
    const applied = applyPatch(base, objects.get(base.objectId) as ObjectDef, item, userId, now, pointer('', i));
    return { base, applied };
  });
  const failures = results.flatMap(({ applied }) => (applied.ok ? [] : [applied.problem]));
  if (failures.length > 0) throw rejected(failures);
  const answered = results.map(({ applied }) => (applied.ok ? applied.record : (undefined as never)));
  const statements = [
    writes.ledger([{ id: writeId, outcome: { r: answered.map((record) => [record.id, record.version]) } }]),
    ...writes.batchWrites(
      results.map(({ base, applied }) => (applied.ok && applied.changed ? { base, record: applied.record } : { base })),
      results.flatMap(({ base, applied }) =>
        applied.ok && applied.changed ? [{ type: 'updated' as const, prev: base, next: applied.record }] : [],
      ),
    ),
    ...(claim === undefined
      ? []
      : [writes.keyDone(claim, writeId, { status: 200, headers: JSON_TYPE, shape: 'items' }, now)]),
  ];
  try {
    const result = await writes.commit(statements, [writeId], deadline);
    if ('committed' in result) return answered;
    return answeredBefore(context, result.finished.get(writeId) as LedgerOutcome, deadline);
  } catch (error) {
    if (error instanceof VersionConflict) return AGAIN;
    throw (
      (await explained(context, error, {
        caller,
        fallback: '',
        references: () =>
          items.flatMap((item, i) => {
            const base = states.get(item.id) as RecordOut;
            const def = objects.get(base.objectId) as ObjectDef;
            return referenceClaims(def, item.fieldValues ?? [], base.fieldValues, pointer('', i));
          }),
        unique: () =>
          claimsOf(
            items.map((item) => ({
              id: item.id,
              objectId: (states.get(item.id) as RecordOut).objectId,
              fieldValues: item.fieldValues ?? [],
            })),
            (objectId) => objects.get(objectId)?.fields,
            (i, name) =>
              pointer('', i, 'fieldValues', items[i]?.fieldValues?.findIndex((f) => f.fieldName === name) ?? 0),
          ),
      })) ?? error
    );
  }
}
