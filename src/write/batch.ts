import type { Context } from '../context.ts';
import type { LedgerOutcome } from '../core/ledger.ts';
import { NO_ACCESS, recordAccess, type Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { applyPatch, patchProblems, type Applied } from '../domain/patch.ts';
import { referenceClaims } from '../domain/references.ts';
import { busy, rejected, unauthorized } from '../http/errors.ts';
import { pointer } from '../schemas/parse.ts';
import type { PatchItemIn, RecordOut } from '../schemas/record.ts';
import type { RecordContext } from '../storage/store.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import { claimsOf } from '../storage/record-index.ts';
import { AGAIN, recomputing } from '../storage/retry.ts';
import { recordPart, VersionConflict, type RecordPart } from '../storage/writes.ts';
import { JSON_TYPE } from './answer.ts';
import { answeredBefore } from './create.ts';
import { CALL_DEADLINE_MS, TURN_TIMEOUT_MS } from './deadlines.ts';
import { explained } from './refusals.ts';
import { itemsAnswer } from './answer.ts';
import { withKey } from './claim.ts';
import type { Write, WriteAnswer, WriteCall } from './write.ts';

type BatchWrite = Extract<Write, { kind: 'batch' }>;

/**
 * Patching records in a batch, all or nothing: one D1 read decides every element; the new
 * states are committed in one D1 batch guarded by the versions read (the unchanged elements
 * too, so every answer is the state at the commit) that starts with the batch's ledger row. If
 * any record moved on meanwhile, nothing was written: read what moved, recompute and commit
 * again, for up to 10 seconds. Batches never hold an object, so they cannot deadlock.
 */

/** A batch, start to end: read, claim its key, commit, answer. */
export async function batchWrite(context: Context, call: WriteCall, write: BatchWrite): Promise<WriteAnswer> {
  const read = await readForBatch(context, call, write);
  return withKey(context, call, read.caller?.userId ?? 0, write.items, async (claim) =>
    itemsAnswer(await patchInTurns(context, call, write, read, claim), 200, context.meter.work()),
  );
}

/** The caller (none: 401), the records and their definitions, read from D1 (a batch needs their state). */
async function readForBatch(context: Context, call: WriteCall, write: BatchWrite): Promise<RecordContext> {
  const read = await context.cached.recordContext(
    call.keyHash,
    write.items.map((item) => item.id),
  );
  if (read.caller === undefined) throw unauthorized();
  return read;
}

async function patchInTurns(
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
    const access = record ? recordAccess(caller, record, write.workspaceId) : NO_ACCESS;
    return patchProblems(record, access, record && objects.get(record.objectId), item, pointer('', i));
  });
  if (problems.length > 0) throw rejected(problems);

  const states = new Map(items.map((item) => [item.id, records.get(item.id) as RecordOut]));
  // The record whose object this runs in gives the batch its turn (no call): the patches queued
  // there before it are written first. The others are guarded by the versions read: a turn in
  // each of their objects would cost a call apiece, and the ledger and the guards keep them right.
  const [first] = items;
  const own = first === undefined ? undefined : states.get(first.id);
  if (own !== undefined && context.recordTurns.owns(own.id)) {
    const turn = await context.recordTurns.turn(own.id, own.version);
    if (!turn.granted) throw busy();
    if (turn.newer !== undefined) states.set(own.id, turn.newer);
  }
  const deadline = arrival + TURN_TIMEOUT_MS;
  const batch: Batch = { writeId: call.id, items, objects, caller, claim, now: Date.now(), parts: new Map() };
  return recomputing(
    async () => {
      const committed = await commitBatch(context, batch, states, deadline);
      if (Array.isArray(committed)) return committed;
      for (const [id, record] of committed) states.set(id, record);
      return AGAIN;
    },
    { deadline, late: busy },
  );
}

/** A batch as it is committed, and each record's part of it, made on the state it was read at. */
interface Batch {
  writeId: string;
  items: readonly PatchItemIn[];
  objects: ReadonlyMap<number, ObjectDef>;
  caller: Caller;
  claim: KeyClaim | undefined;
  now: number;
  parts: Map<number, { applied: Applied; part: RecordPart | undefined }>;
}

/** Applies an element on its record's state; the part made for that state before is kept. */
function partOf(batch: Batch, item: PatchItemIn, i: number, base: RecordOut) {
  const made = batch.parts.get(item.id);
  if (made !== undefined && made.part?.base.version === base.version) return made;
  const def = batch.objects.get(base.objectId) as ObjectDef;
  const applied = applyPatch(base, def, item, batch.caller.userId, batch.now, pointer('', i));
  const part = !applied.ok ? undefined : applied.changed ? recordPart(base, applied.record) : recordPart(base);
  batch.parts.set(item.id, { applied, part });
  return { applied, part };
}

/**
 * Applies every element on the newest states and writes them all in one D1 batch, made only
 * while the records are at those versions, that starts with the batch's ledger row: the records
 * answered, or the states of those that moved on meanwhile (nothing was written).
 */
async function commitBatch(
  context: Context,
  batch: Batch,
  states: ReadonlyMap<number, RecordOut>,
  deadline: number,
): Promise<RecordOut[] | Map<number, RecordOut>> {
  const { writes } = context;
  const { writeId, items, claim, now } = batch;
  const results = items.map((item, i) => partOf(batch, item, i, states.get(item.id) as RecordOut));
  const failures = results.flatMap(({ applied }) => (applied.ok ? [] : [applied.problem]));
  if (failures.length > 0) throw rejected(failures);
  const parts = results.map(({ part }) => part as RecordPart);
  const answered = results.map(({ applied }) => (applied.ok ? applied.record : (undefined as never)));
  const outcome = { r: answered.map((record): [number, number] => [record.id, record.version]) };
  const key =
    claim === undefined
      ? undefined
      : { claim, answer: { status: 200, headers: JSON_TYPE, shape: 'items' as const }, now };
  const made = writes.writesWhile(writeId, outcome, parts, key);
  const statements = made ?? [
    writes.ledger(
      [{ id: writeId, outcome }],
      parts.map(({ base }) => [base.id, base.version]),
    ),
    ...writes.batchWrites(
      parts.map(({ base, record }) => (record === undefined ? { base } : { base, record })),
      parts.flatMap(({ base, record }) =>
        record === undefined ? [] : [{ type: 'updated' as const, prev: base, next: record }],
      ),
    ),
    ...(key === undefined ? [] : [writes.keyDone(key.claim, writeId, key.answer, now)]),
  ];
  try {
    const result = await writes.commit(statements, [writeId], deadline);
    if ('finished' in result) return answeredBefore(context, result.finished.get(writeId) as LedgerOutcome, deadline);
    const moved = made === undefined ? new Map<number, RecordOut>() : writes.movedOf(result.committed);
    return moved.size > 0 ? moved : answered;
  } catch (error) {
    if (error instanceof VersionConflict)
      return writes.moved(
        parts.map(({ base }) => [base.id, base.version]),
        deadline + CALL_DEADLINE_MS,
      );
    throw (
      (await explained(context, error, {
        caller: batch.caller,
        fallback: '',
        references: () =>
          items.flatMap((item, i) => {
            const base = states.get(item.id) as RecordOut;
            const def = batch.objects.get(base.objectId) as ObjectDef;
            return referenceClaims(def, item.fieldValues ?? [], base.fieldValues, pointer('', i));
          }),
        unique: () =>
          claimsOf(
            items.map((item) => ({
              id: item.id,
              objectId: (states.get(item.id) as RecordOut).objectId,
              fieldValues: item.fieldValues ?? [],
            })),
            (objectId) => batch.objects.get(objectId)?.fields,
            (i, name) =>
              pointer('', i, 'fieldValues', items[i]?.fieldValues?.findIndex((f) => f.fieldName === name) ?? 0),
          ),
      })) ?? error
    );
  }
}
