import type { Context } from '../context.ts';
import type { LedgerOutcome } from '../core/ledger.ts';
import { NO_ACCESS, recordAccess, type Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { applyPatch, patchProblems, type Applied } from '../domain/patch.ts';
import { referenceClaims } from '../domain/references.ts';
import { busy, rejected, unauthorized } from '../http/errors.ts';
import { pointer } from '../schemas/parse.ts';
import type { PatchItemIn, RecordOut } from '../schemas/record.ts';
import { claimsOf } from '../storage/record-index.ts';
import { AGAIN } from '../storage/retry.ts';
import { recordPart, type RecordPart } from '../storage/writes.ts';
import { itemsAnswer, JSON_TYPE } from './answer.ts';
import { BatchLane, type LanePlace } from './batch-lane.ts';
import { CALL_DEADLINE_MS } from './deadlines.ts';
import type { WriteRun } from './kind.ts';
import type { Write, WriteCall } from './write.ts';

type BatchWrite = Extract<Write, { kind: 'batch' }>;

/**
 * Patching records in a batch, all or nothing: one D1 read decides every element; the engine
 * commits the new states in one D1 batch guarded by the versions read (the unchanged elements
 * too, so every answer is the state at the commit) that starts with the batch's ledger row. If
 * any record moved on meanwhile, nothing was written: the batch learns what moved and is decided
 * again, for up to 10 seconds. Batches never hold an object, so they cannot deadlock. Batches of
 * one isolate that share records take turns (see batch-lane.ts), so they seldom meet there.
 */

/** A batch, read: the records and their definitions, read from D1 (a batch needs their state). */
export async function batchRun(
  context: Context,
  call: WriteCall,
  write: BatchWrite,
): Promise<WriteRun<BatchPlan, RecordOut[]>> {
  const { caller, records, objects } = await context.cached.recordContext(
    call.keyHash,
    write.items.map((item) => item.id),
  );
  if (caller === undefined) throw unauthorized();
  const { items } = write;
  const { writes } = context;
  const states = new Map<number, RecordOut>();
  const batch: Batch = { items, objects, caller, now: Date.now(), parts: new Map() };
  let place: LanePlace | undefined;
  let committed: readonly RecordOut[] | undefined;
  /** Read once more for the records whose versions a commit found moved on. */
  const learn = (moved: ReadonlyMap<number, RecordOut>) => {
    for (const [id, record] of moved) states.set(id, record);
  };
  return {
    userId: caller.userId,
    body: items,
    decide: async () => {
      if (states.size === 0) {
        const problems = items.flatMap((item, i) => {
          const record = records.get(item.id);
          const access = record ? recordAccess(caller, record, write.workspaceId) : NO_ACCESS;
          return patchProblems(record, access, record && objects.get(record.objectId), item, pointer('', i));
        });
        if (problems.length > 0) throw rejected(problems);
        for (const item of items) states.set(item.id, records.get(item.id) as RecordOut);
        await ownTurn(context, items, states);
        // After its turn: a batch in the lane is one about to commit, never one waiting on a busy record.
        place = lane.enter([...states.keys()]);
        for (const [id, record] of await place.ready(LANE_WAIT_MS))
          if (record.version > (states.get(id)?.version ?? Infinity)) states.set(id, record);
        batch.now = Date.now();
      }
      return planBatch(batch, states);
    },
    commit: {
      keyAnswer: { status: 200, headers: JSON_TYPE, shape: 'items' },
      statements: (plan, key) => {
        plan.made = writes.writesWhile(call.id, plan.outcome, plan.parts, key);
        return (
          plan.made ?? [
            writes.ledger(
              [{ id: call.id, outcome: plan.outcome }],
              plan.parts.map(({ base }) => [base.id, base.version]),
            ),
            ...writes.batchWrites(
              plan.parts.map(({ base, record }) => (record === undefined ? { base } : { base, record })),
              plan.parts.flatMap(({ base, record }) =>
                record === undefined ? [] : [{ type: 'updated' as const, prev: base, next: record }],
              ),
            ),
            ...(key === undefined ? [] : [writes.keyDone(key.claim, call.id, key.answer, key.now)]),
          ]
        );
      },
      committed: (plan, results) => {
        const moved = plan.made === undefined ? new Map<number, RecordOut>() : writes.movedOf(results);
        if (moved.size === 0) return (committed = plan.answered);
        // It races from now on: the batches after it need not wait for it.
        place?.leave();
        learn(moved);
        return AGAIN;
      },
      replayed: (_, answered) => (committed = answered),
      lost: async (plan, deadline) => {
        place?.leave();
        learn(
          await writes.moved(
            plan.parts.map(({ base }) => [base.id, base.version]),
            deadline + CALL_DEADLINE_MS,
          ),
        );
      },
    },
    claims: () => ({
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
    }),
    answer: (answered, work) => itemsAnswer(answered, 200, work),
    settled: () => place?.leave(committed),
  };
}

/** How long a batch waits for the ones before it: past that, it races them (its guards keep it right). */
const LANE_WAIT_MS = 2_000;
/** A batch that never left (its object reset) holds the ones after it this long after it entered, at most. */
const LANE_LIFE_MS = 5_000;
/** The batches of this isolate, in the order they take turns on records they share. */
const lane = new BatchLane(LANE_LIFE_MS);

/**
 * The record whose object this runs in gives the batch its turn (no call): the patches queued
 * there before it are written first. The others are guarded by the versions read: a turn in
 * each of their objects would cost a call apiece, and the ledger and the guards keep them right.
 */
async function ownTurn(context: Context, items: readonly PatchItemIn[], states: Map<number, RecordOut>) {
  const [first] = items;
  const own = first === undefined ? undefined : states.get(first.id);
  if (own === undefined || !context.recordTurns.owns(own.id)) return;
  const turn = await context.recordTurns.turn(own.id, own.version);
  if (!turn.granted) throw busy();
  if (turn.newer !== undefined) states.set(own.id, turn.newer);
}

/** The elements and what each record's part of the batch was made on. */
interface Batch {
  items: readonly PatchItemIn[];
  objects: ReadonlyMap<number, ObjectDef>;
  caller: Caller;
  /** When the batch writes: its records' update time. */
  now: number;
  parts: Map<number, { applied: Applied; part: RecordPart | undefined }>;
}

/** One attempt: every element applied on the newest states, and the statements it was made into. */
interface BatchPlan {
  parts: RecordPart[];
  answered: RecordOut[];
  outcome: LedgerOutcome;
  /** Statements made only while the records are at the versions read (see writesWhile). */
  made?: D1PreparedStatement[] | undefined;
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

/** Applies every element on the newest states: the plan, or the elements' refusal. */
function planBatch(batch: Batch, states: ReadonlyMap<number, RecordOut>): BatchPlan {
  const results = batch.items.map((item, i) => partOf(batch, item, i, states.get(item.id) as RecordOut));
  const failures = results.flatMap(({ applied }) => (applied.ok ? [] : [applied.problem]));
  if (failures.length > 0) throw rejected(failures);
  const answered = results.map(({ applied }) => (applied.ok ? applied.record : (undefined as never)));
  return {
    parts: results.map(({ part }) => part as RecordPart),
    answered,
    outcome: { r: answered.map((record): [number, number] => [record.id, record.version]) },
  };
}
