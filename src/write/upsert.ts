import type { Context } from '../context.ts';
import { foldCase } from '../core/fold.ts';
import type { UpsertResult } from '../core/ledger.ts';
import { pointer, type InputProblem } from '../core/problem.ts';
import { fieldLimits, NO_ACCESS, recordAccess, seesObject, visibleDef, type Caller } from '../domain/access.ts';
import { planCreate, type NewRecord } from '../domain/create.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { applyPatch, patchProblems, type Applied } from '../domain/patch.ts';
import { createdRecord } from '../domain/record-json.ts';
import { referenceClaims } from '../domain/references.ts';
import { invalidBody, notFound, rejected, unauthorized } from '../http/errors.ts';
import type { RecordOut, UpsertIn } from '../schemas/record.ts';
import { claimsOf, isUniqueViolation, uniqueHolders, type UniqueClaim } from '../storage/record-index.ts';
import { AGAIN } from '../storage/retry.ts';
import { itemsAnswer, JSON_TYPE } from './answer.ts';
import type { KeyCompletion, WriteRun } from './kind.ts';
import type { Write, WriteCall } from './write.ts';

type UpsertWrite = Extract<Write, { kind: 'upsert' }>;

/**
 * Upserting records of one object, all or nothing: each item whose `matchOn` value a live record
 * holds patches that record (guarded by the version read, as in a patch batch), the others
 * create records; all of it is one D1 batch that starts with the upsert's ledger row.
 * D1's unique index decides races: when another writer took a value first, nothing was written,
 * and the upsert runs again on what D1 holds now (so concurrent upserts of one new value create
 * exactly one record, the others update it). The ledger row holds every record's id and version
 * and what was done to it, so a replay or a lost reply is answered from it.
 */

export interface Upserted {
  results: UpsertResult[];
  records: RecordOut[];
}

/** An upsert, read: the caller (401) and the object (404 unless the caller is in one of its workspaces). */
export async function upsertRun(
  context: Context,
  call: WriteCall,
  write: UpsertWrite,
): Promise<WriteRun<UpsertPlan, Upserted>> {
  const known = await context.cached.createContext(call.keyHash, [write.objectId], true);
  const caller = known.caller;
  if (caller === undefined) throw unauthorized();
  const def = known.objects.get(write.objectId);
  if (def === undefined || !def.workspaceIds.some((id) => seesObject(caller, id, def.id))) throw notFound('Object');
  // A hidden field is as one the object does not have: it cannot be matched on.
  const problems = matchProblems(visibleDef(def, fieldLimits(caller, def.id, def.workspaceIds)), write.body);
  if (problems.length > 0) throw invalidBody(problems);
  const { body } = write;
  const matched: UniqueClaim[] = claimsOf(
    body.items.map((item) => ({
      objectId: def.id,
      fieldValues: item.fieldValues.filter((f) => f.fieldName === body.matchOn),
    })),
    () => def.fields,
    (i) => pointer('', 'items', i),
  );
  return {
    userId: caller.userId,
    body,
    decide: () => planUpsert(context, call, body, caller, def, matched),
    commit: {
      keyAnswer: { status: 200, headers: JSON_TYPE, shape: 'items' },
      statements: (plan, key) => statementsOf(context, call.id, body, plan, key),
      committed: (plan, results) => {
        const created = plan.creates.records.map((record, k) =>
          createdRecord(
            record,
            (results[1 + plan.updated + k * 3]?.results[0] as { id: number } | undefined)?.id as number,
          ),
        );
        return {
          results: plan.results,
          records: body.items.map((_, i) => {
            const update = plan.updates.find((u) => u.i === i);
            return update === undefined ? (created[plan.creates.indices.indexOf(i)] as RecordOut) : stateOf(update);
          }),
        };
      },
      replayed: (outcome, records) => ({
        records,
        results: records.map((_, i) => ('r' in outcome ? outcome.u?.[i] : undefined) ?? 'updated'),
      }),
      // Another writer took a matched value first: run again. Else another unique field clashes.
      refused: async (plan, error) =>
        isUniqueViolation(error) &&
        JSON.stringify(await uniqueHolders(context.primary, matched)) !== JSON.stringify(plan.holders)
          ? AGAIN
          : undefined,
    },
    claims: (plan) => ({
      caller,
      fallback: '/items',
      references: () =>
        body.items.flatMap((item, i) =>
          referenceClaims(
            plan.current,
            item.fieldValues,
            plan.updates.find((u) => u.i === i)?.base.fieldValues ?? [],
            pointer('', 'items', i),
          ),
        ),
      unique: () =>
        claimsOf(
          body.items.map((item, i) => ({
            objectId: plan.current.id,
            fieldValues: item.fieldValues,
            ...(plan.holders[i] === undefined ? {} : { id: plan.holders[i] }),
          })),
          () => plan.current.fields,
          (i, name) =>
            pointer(
              '',
              'items',
              i,
              'fieldValues',
              body.items[i]?.fieldValues.findIndex((f) => f.fieldName === name) ?? 0,
            ),
        ),
    }),
    answer: ({ records, results }, work) => itemsAnswer(records, 200, work, results),
  };
}

/** A matched value as the unique index keeps it: text and email folded. */
function matchKey(def: ObjectDef, matchOn: string, values: readonly { fieldName: string; value: unknown }[]): unknown {
  const value = values.find((f) => f.fieldName === matchOn)?.value;
  const type = def.fields.find((f) => f.name === matchOn)?.type;
  return typeof value === 'string' && (type === 'text' || type === 'email') ? foldCase(value) : value;
}

/** The matchOn field must be unique; every item must give it a value, each value once. */
function matchProblems(def: ObjectDef, body: UpsertIn): InputProblem[] {
  const field = def.fields.find((f) => f.name === body.matchOn);
  if (field?.unique !== true)
    return [{ pointer: '/matchOn', code: 'not_unique', message: 'expected a unique field of the object' }];
  const seen = new Set<string>();
  return body.items.flatMap((item, i) => {
    const j = item.fieldValues.findIndex((value) => value.fieldName === body.matchOn);
    const value = item.fieldValues[j]?.value;
    if (j < 0 || value === null || value === undefined)
      return [
        { pointer: pointer('', 'items', i, 'fieldValues'), code: 'required', message: `${body.matchOn} is required` },
      ];
    // Only a string is folded: a value of another type (refused later, at its pointer) is no
    // duplicate of a text that reads the same (`["Ä"]` or 12 beside `ä` or "12").
    const key = JSON.stringify(
      typeof value === 'string' ? matchKey(def, body.matchOn, [{ fieldName: body.matchOn, value }]) : value,
    );
    const twice = seen.has(key);
    seen.add(key);
    return twice
      ? [
          {
            pointer: pointer('', 'items', i, 'fieldValues', j, 'value'),
            code: 'duplicate',
            message: 'matched twice in one request',
          },
        ]
      : [];
  });
}

/** A problem of the k-th create (pointer `/k/…`) as it is in the request (`/items/i/…`). */
function inRequest(problem: InputProblem, indices: readonly number[]): InputProblem {
  const match = /^\/(\d+)(.*)$/.exec(problem.pointer ?? '');
  if (match === null) return problem;
  return { ...problem, pointer: `/items/${indices[Number(match[1])] ?? 0}${match[2] ?? ''}` };
}

/** One attempt's plan: which items update which records (in their turn's state), which create. */
interface UpsertPlan {
  holders: (number | undefined)[];
  updates: { i: number; base: RecordOut; applied: Applied }[];
  creates: { indices: number[]; records: NewRecord[] };
  current: ObjectDef;
  /** What is done to each item's record. */
  results: UpsertResult[];
  /** Statements of the updates, before the creates' (set as they are made). */
  updated: number;
}

/**
 * Finds the holders of the matched values and decides every item on them: the plan, or AGAIN
 * when a holder let go of its value before it was read. The updated records are guarded by the
 * versions read, as a batch's are.
 */
async function planUpsert(
  context: Context,
  call: WriteCall,
  body: UpsertIn,
  caller: Caller,
  def: ObjectDef,
  matched: readonly UniqueClaim[],
): Promise<UpsertPlan | typeof AGAIN> {
  const holders = await uniqueHolders(context.primary, matched);
  const { records, objects } = await context.cached.recordContext(call.keyHash, [
    ...new Set(holders.filter((h) => h !== undefined)),
  ]);
  const current = objects.get(def.id) ?? def;
  const updates = body.items.flatMap((item, i) =>
    holders[i] === undefined ? [] : [{ i, id: holders[i] as number, item }],
  );
  const createIndices = body.items.flatMap((_, i) => (holders[i] === undefined ? [i] : []));
  const problems = updates.flatMap(({ i, id, item }) => {
    const record = records.get(id);
    const access = record ? recordAccess(caller, record) : NO_ACCESS;
    // An item names no id: a record it may not change is answered at the item.
    return patchProblems(record, access, record && objects.get(record.objectId), item, pointer('', 'items', i)).map(
      (p) => (p.pointer === pointer('', 'items', i, 'id') ? { ...p, pointer: pointer('', 'items', i) } : p),
    );
  });
  const now = Date.now();
  const planned = planCreate(
    caller,
    createIndices.map((i) => ({ objectId: def.id, ...(body.items[i] as UpsertIn['items'][number]) })),
    new Map([[def.id, current]]),
    now,
  );
  if (!planned.ok) problems.push(...planned.problems.map((p) => inRequest(p, createIndices)));
  if (problems.length > 0 || !planned.ok) throw rejected(problems);

  const bases = updates.map(({ id }) => records.get(id) as RecordOut);
  // A record found holding an item's value may have let go of it before it was read (a patch,
  // a delete): match again on what D1 holds now, as a serial order would.
  const key = (values: RecordOut['fieldValues']): unknown => matchKey(def, body.matchOn, values);
  if (
    updates.some(
      ({ item }, k) => bases[k]?.deleted === true || key(bases[k]?.fieldValues ?? []) !== key(item.fieldValues),
    )
  )
    return AGAIN;
  const applied = updates.map(({ i, item }, k) => {
    const base = bases[k] as RecordOut;
    const def = objects.get(base.objectId) as ObjectDef;
    const patch = { fieldValues: item.fieldValues };
    return { i, base, applied: applyPatch(base, def, patch, caller.userId, now, pointer('', 'items', i)) };
  });
  const failures = applied.flatMap((u) => (u.applied.ok ? [] : [u.applied.problem]));
  if (failures.length > 0) throw rejected(failures);
  return {
    holders,
    current,
    creates: { indices: createIndices, records: planned.value },
    updates: applied,
    results: body.items.map((_, i) => {
      const update = applied.find((u) => u.i === i);
      if (update === undefined) return 'created';
      return update.applied.ok && update.applied.changed ? 'updated' : 'unchanged';
    }),
    updated: 0,
  };
}

const stateOf = ({ base, applied }: UpsertPlan['updates'][number]): RecordOut => (applied.ok ? applied.record : base);

/** The plan's one D1 batch: its ledger row (every item's record and what was done to it), updates, creates, key. */
function statementsOf(
  { writes }: Context,
  writeId: string,
  body: UpsertIn,
  plan: UpsertPlan,
  key: KeyCompletion | undefined,
): D1PreparedStatement[] {
  const entries = body.items.map((_, i): [number, number] | [null, number] => {
    const update = plan.updates.find((u) => u.i === i);
    if (update === undefined) return [null, plan.creates.indices.indexOf(i)];
    const record = stateOf(update);
    return [record.id, record.version];
  });
  const updates = writes.batchWrites(
    plan.updates.map(({ base, applied: a }) => (a.ok && a.changed ? { base, record: a.record } : { base })),
    plan.updates.flatMap(({ base, applied: a }) =>
      a.ok && a.changed ? [{ type: 'updated' as const, prev: base, next: a.record }] : [],
    ),
  );
  plan.updated = updates.length;
  return [
    writes.ledgerOfUpsert(writeId, entries, plan.results, plan.current.id),
    ...updates,
    ...writes.inserts(plan.creates.records),
    ...(key === undefined ? [] : [writes.keyDone(key.claim, writeId, key.answer, key.now)]),
  ];
}
