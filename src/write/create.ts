import type { Context } from '../context.ts';
import { failureOf, problemsOf, type LedgerOutcome } from '../core/ledger.ts';
import type { Caller } from '../domain/access.ts';
import { planCreate, type NewRecord } from '../domain/create.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { createdRecord } from '../domain/record-json.ts';
import { referenceClaims } from '../domain/references.ts';
import { rejected, unauthorized } from '../http/errors.ts';
import { pointer } from '../schemas/parse.ts';
import type { CreateItemIn, RecordOut } from '../schemas/record.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import { claimsOf } from '../storage/record-index.ts';
import { CALL_DEADLINE_MS, TURN_TIMEOUT_MS } from './deadlines.ts';
import { itemsAnswer, JSON_TYPE } from './answer.ts';
import { withKey } from './claim.ts';
import type { Write, WriteAnswer, WriteCall } from './write.ts';
import { explained } from './refusals.ts';

/**
 * Creating records, all or nothing: planned on the caller and the definitions, then one D1
 * batch that starts with the write's ledger row. A repeat of a committed create fails on that
 * row and changes nothing; the records it made are read back from their `created` change rows.
 */

type CreateWrite = Extract<Write, { kind: 'create' }>;

/** A create, start to end: read (what the Worker read, else memory, else D1), claim its key, plan, commit, answer. */
export async function createWrite(context: Context, call: WriteCall, write: CreateWrite): Promise<WriteAnswer> {
  const read: CreateRead | undefined =
    call.read === undefined
      ? await readForCreate(context, call.keyHash, write.items)
      : {
          caller: call.read.caller,
          objects: new Map(call.read.objects.map((def) => [def.id, def])),
          remembered: false,
        };
  if (read === undefined) throw unauthorized();
  return withKey(context, call, read.caller.userId, write.items, async (claim) => {
    const records = await planCreates(context, call.keyHash, write.items, read);
    return itemsAnswer(
      await commitCreates(context, call.id, write.items, records, read, claim),
      201,
      context.meter.work(),
    );
  });
}

async function readForCreate(
  context: Context,
  keyHash: string,
  items: readonly CreateItemIn[],
): Promise<CreateRead | undefined> {
  const read = await context.cached.createContext(keyHash, [...new Set(items.map((item) => item.objectId))]);
  return read.caller === undefined ? undefined : { ...read, caller: read.caller };
}

/** What a create is decided on: the caller and the current definitions of its objects. */
export interface CreateRead {
  caller: Caller;
  objects: ReadonlyMap<number, ObjectDef>;
  remembered: boolean;
}

/** Plans the records; a refusal made on the isolate's memory alone is made again on a fresh read. */
async function planCreates(
  context: Context,
  keyHash: string,
  items: readonly CreateItemIn[],
  read: CreateRead,
): Promise<NewRecord[]> {
  let plan = planCreate(read.caller, items, read.objects, Date.now());
  if (!plan.ok && read.remembered) {
    const objectIds = [...new Set(items.map((item) => item.objectId))];
    const fresh = await context.cached.createContext(keyHash, objectIds, true);
    if (fresh.caller !== undefined) plan = planCreate(fresh.caller, items, fresh.objects, Date.now());
  }
  if (!plan.ok) throw rejected(plan.problems);
  return plan.value;
}

/** Writes the planned records in one D1 batch: the records as answered. */
async function commitCreates(
  context: Context,
  writeId: string,
  items: readonly CreateItemIn[],
  records: readonly NewRecord[],
  read: CreateRead,
  claim: KeyClaim | undefined,
): Promise<RecordOut[]> {
  const { writes } = context;
  const now = Date.now();
  const deadline = now + TURN_TIMEOUT_MS;
  const statements = [
    writes.ledgerOfCreate(writeId, records.length, records[0]?.objectId ?? 0),
    ...writes.inserts(records),
    ...(claim === undefined
      ? []
      : [writes.keyDone(claim, writeId, { status: 201, headers: JSON_TYPE, shape: 'items' }, now)]),
  ];
  const result = await writes.commit<{ id: number }>(statements, [writeId], deadline).catch(async (error) => {
    throw (
      (await explained(context, error, {
        caller: read.caller,
        fallback: '',
        references: () =>
          records.flatMap((record, i) => {
            const def = read.objects.get(record.objectId);
            return def === undefined ? [] : referenceClaims(def, items[i]?.fieldValues ?? [], [], pointer('', i));
          }),
        unique: () =>
          claimsOf(
            records,
            (id) => read.objects.get(id)?.fields,
            (i, name) =>
              pointer('', i, 'fieldValues', items[i]?.fieldValues.findIndex((v) => v.fieldName === name) ?? 0),
          ),
      })) ?? error
    );
  });
  if ('committed' in result)
    return records.map((record, i) => createdRecord(record, result.committed[1 + i * 3]?.results[0]?.id as number));
  return answeredBefore(context, result.finished.get(writeId) as LedgerOutcome, deadline);
}

/** What an earlier attempt of the same write committed (or was refused), as it was answered. */
export async function answeredBefore(context: Context, outcome: LedgerOutcome, deadline: number): Promise<RecordOut[]> {
  const failure = failureOf(outcome);
  if (failure !== undefined) throw rejected(problemsOf(outcome), failure.status);
  return (await context.writes.answered(outcome, deadline + CALL_DEADLINE_MS)) ?? [];
}
