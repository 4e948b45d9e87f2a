import * as v from 'valibot';
import type { Context } from '../context.ts';
import { foldCase } from '../core/fold.ts';
import { failureOf, newWriteId, type LedgerOutcome, type UpsertResult } from '../core/ledger.ts';
import { pointer, type InputProblem } from '../core/problem.ts';
import type { Settled } from '../core/settle.ts';
import { recordAccess } from '../domain/access.ts';
import { planCreate } from '../domain/create.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { applyPatch, patchProblems } from '../domain/patch.ts';
import { createdRecord } from '../domain/record-json.ts';
import { busy, invalidBody, notFound, rejected, unauthorized, type HttpError } from '../http/errors.ts';
import { FieldName, MAX_BATCH } from '../schemas/common.ts';
import { fieldValueDuplicates, parseObject } from '../schemas/parse.ts';
import { CreateItem, type RecordOut } from '../schemas/record.ts';
import { isInvalidReference, referenceProblems } from '../storage/references.ts';
import { referenceClaims } from '../domain/references.ts';
import { claimsOf, isUniqueViolation, uniqueClashes, uniqueHolders, uniqueViolation } from '../storage/record-index.ts';
import { sleep } from '../storage/retry.ts';
import { VersionConflict } from '../storage/writes.ts';
import { CALL_DEADLINE_MS, TURN_TIMEOUT_MS } from '../writing/deadlines.ts';
import { claimKey, holding, wellShaped, type KeyRequest, type Written } from './idempotent.ts';

export const UpsertItem = v.strictObject({
  fieldValues: CreateItem.entries.fieldValues,
  isTemplate: CreateItem.entries.isTemplate,
});
export const UpsertBody = v.strictObject({
  matchOn: v.pipe(FieldName, v.description('A unique field of the object: the value each item is matched on.')),
  items: v.pipe(v.array(UpsertItem), v.minLength(1), v.maxLength(MAX_BATCH)),
});
type UpsertIn = v.InferOutput<typeof UpsertBody>;

export interface UpsertInput {
  keyHash: string;
  objectId: number;
  body: Settled<unknown>;
  idempotency: KeyRequest;
}

export interface Upserted {
  result: UpsertResult;
  record: RecordOut;
}

/** Shape problems Valibot cannot find: the number of items (checked first), fieldNames given twice. */
function extra(input: unknown): InputProblem[] {
  const items = (input as { items?: unknown } | null)?.items;
  if (!Array.isArray(items)) return [];
  if (items.length < 1 || items.length > MAX_BATCH)
    return [{ pointer: '/items', code: 'invalid_length', message: `expected 1 to ${MAX_BATCH} items` }];
  return items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', 'items', i)));
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
    const text = typeof value === 'string' && (field.type === 'text' || field.type === 'email');
    const key = JSON.stringify(text ? foldCase(value) : value);
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
  const at = problem.pointer ?? '';
  const match = /^\/(\d+)(.*)$/.exec(at);
  if (match === null) return problem;
  return { ...problem, pointer: `/items/${indices[Number(match[1])] ?? 0}${match[2] ?? ''}` };
}

/**
 * Upserting records of one object, all or nothing: each item whose `matchOn` value a live record
 * holds patches that record (its object gives the upsert a turn, as in a patch batch), the
 * others create records; all of it is one D1 batch that starts with the upsert's ledger row.
 * D1's unique index decides races: when another writer took a value first, nothing was written,
 * and the upsert runs again on what D1 holds now (so concurrent upserts of one new value create
 * exactly one record, the others update it). The ledger row holds every record's id and version
 * and what was done to it, so a replay or a lost reply is answered from it.
 */
export async function upsertRecords(
  context: Context,
  input: UpsertInput,
  writeId: string = newWriteId(),
): Promise<Written<Upserted[]>> {
  const arrival = Date.now();
  const { recall, writes, env } = context;
  const parsed = input.body.ok ? parseObject(UpsertBody, input.body.value, extra) : undefined;
  const known = await recall.createContext(input.keyHash, [input.objectId], true);
  const caller = known.caller;
  if (caller === undefined) throw unauthorized();
  const body = wellShaped(input.body, parsed, input.idempotency);
  const def = known.objects.get(input.objectId);
  if (def === undefined || !def.workspaceIds.some((id) => caller.roles.has(id))) throw notFound('Object');
  const problems = matchProblems(def, body);
  if (problems.length > 0) throw invalidBody(problems);
  const held = await claimKey(context, input.idempotency, caller.userId, body, writeId);
  if ('replay' in held) return held;

  return holding(context, held.claim, async () => {
    const deadline = arrival + TURN_TIMEOUT_MS;
    for (let attempt = 1; ; attempt++) {
      const claims = claimsOf(
        body.items.map((item) => ({
          objectId: def.id,
          fieldValues: item.fieldValues.filter((f) => f.fieldName === body.matchOn),
        })),
        () => def.fields,
        (i) => pointer('', 'items', i),
      );
      const holders = await uniqueHolders(env.DB, claims);
      const { records, objects } = await recall.recordContext(input.keyHash, [
        ...new Set(holders.filter((h) => h !== undefined)),
      ]);
      const current = objects.get(def.id) ?? def;
      const updates = body.items.flatMap((item, i) => {
        const id = holders[i];
        return id === undefined ? [] : [{ i, id, patch: { fieldValues: item.fieldValues } }];
      });
      const createIndices = body.items.flatMap((_, i) => (holders[i] === undefined ? [i] : []));
      const found = updates.flatMap(({ i, id, patch }) => {
        const record = records.get(id);
        const access = record ? recordAccess(caller, record.sharedWorkspaceIds) : 'none';
        // An item names no id: a record it may not change is answered at the item.
        return patchProblems(
          record,
          access,
          record && objects.get(record.objectId),
          patch,
          pointer('', 'items', i),
        ).map((p) => (p.pointer === pointer('', 'items', i, 'id') ? { ...p, pointer: pointer('', 'items', i) } : p));
      });
      const plan = planCreate(
        caller,
        createIndices.map((i) => ({ objectId: def.id, ...(body.items[i] as UpsertIn['items'][number]) })),
        new Map([[def.id, current]]),
        Date.now(),
      );
      if (!plan.ok) found.push(...plan.problems.map((p) => inRequest(p, createIndices)));
      if (found.length > 0 || !plan.ok) throw rejected(found);

      const turns = await Promise.all(
        updates.map(({ id }) =>
          context.recordObjects.turn(id, (records.get(id) as RecordOut).version, arrival + CALL_DEADLINE_MS),
        ),
      );
      if (turns.some((turn) => !turn.granted)) throw busy();
      // A record read as holding an item's value may have let go of it before its turn (a patch,
      // a delete): match again on what D1 holds now, as a serial order would.
      const matchKey = (values: readonly { fieldName: string; value: unknown }[]): unknown => {
        const value = values.find((f) => f.fieldName === body.matchOn)?.value;
        const type = def.fields.find((f) => f.name === body.matchOn)?.type;
        return typeof value === 'string' && (type === 'text' || type === 'email') ? foldCase(value) : value;
      };
      const moved = updates.some(({ i, id }, k) => {
        const base = turns[k]?.newer ?? (records.get(id) as RecordOut);
        return base.deleted || matchKey(base.fieldValues) !== matchKey(body.items[i]?.fieldValues ?? []);
      });
      if (moved) {
        if (Date.now() >= deadline) throw busy();
        await sleep(Math.random() * Math.min(50, 2 * attempt));
        continue;
      }
      const now = Date.now();
      const applied = updates.map(({ i, id, patch }, k) => {
        const base = turns[k]?.newer ?? (records.get(id) as RecordOut);
        return {
          i,
          base,
          applied: applyPatch(
            base,
            objects.get(base.objectId) as ObjectDef,
            patch,
            caller.userId,
            now,
            pointer('', 'items', i),
          ),
        };
      });
      const failures = applied.flatMap(({ applied: a }) => (a.ok ? [] : [a.problem]));
      if (failures.length > 0) throw rejected(failures);

      const results: UpsertResult[] = body.items.map((_, i) => {
        const update = applied.find((a) => a.i === i);
        if (update === undefined) return 'created';
        return update.applied.ok && update.applied.changed ? 'updated' : 'unchanged';
      });
      const entries = body.items.map((_, i): [number, number] | [null, number] => {
        const update = applied.find((a) => a.i === i);
        if (update === undefined) return [null, createIndices.indexOf(i)];
        const record = update.applied.ok ? update.applied.record : update.base;
        return [record.id, record.version];
      });
      const statements = [
        writes.ledgerOfUpsert(writeId, entries, results),
        ...writes.batchWrites(
          applied.map(({ base, applied: a }) => (a.ok && a.changed ? { base, record: a.record } : { base })),
          applied.flatMap(({ base, applied: a }) =>
            a.ok && a.changed ? [{ type: 'updated' as const, prev: base, next: a.record }] : [],
          ),
        ),
        ...writes.inserts(plan.value),
        ...(held.claim === undefined
          ? []
          : [
              writes.keyDone(
                held.claim,
                writeId,
                { status: 200, headers: { 'Content-Type': 'application/json' }, shape: 'items' },
                now,
              ),
            ]),
      ];
      const inserted = statements.length - plan.value.length * 3 - (held.claim === undefined ? 0 : 1);
      let refused: HttpError | undefined;
      try {
        const result = await writes.commit<{ id: number }>(statements, [writeId], deadline);
        if ('committed' in result) {
          const created = plan.value.map((record, k) =>
            createdRecord(record, result.committed[inserted + k * 3]?.results[0]?.id as number),
          );
          return {
            value: body.items.map((_, i) => {
              const update = applied.find((a) => a.i === i);
              const record =
                update === undefined
                  ? (created[createIndices.indexOf(i)] as RecordOut)
                  : update.applied.ok
                    ? update.applied.record
                    : update.base;
              return { result: results[i] as UpsertResult, record };
            }),
          };
        }
        const outcome = result.finished.get(writeId) as LedgerOutcome;
        const failure = failureOf(outcome);
        if (failure !== undefined)
          throw rejected(failure.problem === undefined ? [] : [failure.problem], failure.status);
        const answered = (await writes.answered(outcome, deadline + CALL_DEADLINE_MS)) ?? [];
        const done = 'r' in outcome ? (outcome.u ?? []) : [];
        return { value: answered.map((record, i) => ({ result: done[i] ?? 'updated', record })) };
      } catch (error) {
        if (error instanceof VersionConflict) refused = busy();
        else if (isInvalidReference(error)) {
          // A reference names no live record of its target that the caller can read: say which.
          const claims = body.items.flatMap((item, i) => {
            const update = applied.find((a) => a.i === i);
            return referenceClaims(current, item.fieldValues, update?.base.fieldValues ?? [], pointer('', 'items', i));
          });
          throw rejected(await referenceProblems(env.DB, claims, caller.userId, '/items'));
        } else if (isUniqueViolation(error)) {
          // Another writer took a matched value first: run again. Else another unique field clashes.
          const now = await uniqueHolders(env.DB, claims);
          if (JSON.stringify(now) !== JSON.stringify(holders)) refused = busy();
          else {
            const clashes = await uniqueClashes(
              env.DB,
              claimsOf(
                body.items.map((item, i) => ({
                  objectId: def.id,
                  fieldValues: item.fieldValues,
                  ...(holders[i] === undefined ? {} : { id: holders[i] }),
                })),
                () => def.fields,
                (i, name) =>
                  pointer(
                    '',
                    'items',
                    i,
                    'fieldValues',
                    body.items[i]?.fieldValues.findIndex((f) => f.fieldName === name) ?? 0,
                  ),
              ),
              (shared) => recordAccess(caller, shared) !== 'none',
            );
            throw rejected(clashes.length > 0 ? clashes : [uniqueViolation('/items')]);
          }
        } else throw error;
      }
      // Another writer moved first (a record changed, or took a value this upsert creates): run
      // again on what D1 holds now, until the deadline.
      if (Date.now() >= deadline) throw refused;
      await sleep(Math.random() * Math.min(50, 2 * attempt));
    }
  });
}
