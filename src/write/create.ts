import type { Context } from '../context.ts';
import type { Caller } from '../domain/access.ts';
import { planCreate, type NewRecord } from '../domain/create.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { createdRecord } from '../domain/record-json.ts';
import { referenceClaims } from '../domain/references.ts';
import { rejected, unauthorized } from '../http/errors.ts';
import { pointer } from '../schemas/parse.ts';
import type { CreateItemIn, RecordOut } from '../schemas/record.ts';
import { claimsOf } from '../storage/record-index.ts';
import { itemsAnswer, JSON_TYPE } from './answer.ts';
import type { WriteRun } from './kind.ts';
import type { Write, WriteCall } from './write.ts';

/**
 * Creating records, all or nothing: planned on the caller and the definitions; the engine commits
 * the plan as one D1 batch that starts with the write's ledger row. A repeat of a committed create
 * fails on that row and changes nothing; the records it made are read back from their `created`
 * change rows.
 */

type CreateWrite = Extract<Write, { kind: 'create' }>;

/** A create, read (what the Worker read, else memory, else D1) and made a run: plan, one batch, its records. */
export async function createRun(
  context: Context,
  call: WriteCall,
  write: CreateWrite,
): Promise<WriteRun<NewRecord[], RecordOut[]>> {
  const read: CreateRead | undefined =
    call.read === undefined
      ? await readForCreate(context, call.keyHash, write.items)
      : {
          caller: call.read.caller,
          objects: new Map(call.read.objects.map((def) => [def.id, def])),
          remembered: false,
        };
  if (read === undefined) throw unauthorized();
  const { writes } = context;
  const { items } = write;
  return {
    userId: read.caller.userId,
    body: items,
    decide: () => planCreates(context, call.keyHash, items, read),
    commit: {
      keyAnswer: { status: 201, headers: JSON_TYPE, shape: 'items' },
      statements: (records, key) => [
        writes.ledgerOfCreate(call.id, records.length, records[0]?.objectId ?? 0),
        ...writes.inserts(records),
        ...(key === undefined ? [] : [writes.keyDone(key.claim, call.id, key.answer, key.now)]),
      ],
      // Each record's insert is the first of its three statements, after the ledger row.
      committed: (records, results) =>
        records.map((record, i) =>
          createdRecord(record, (results[1 + i * 3]?.results[0] as { id: number } | undefined)?.id as number),
        ),
      replayed: (_, records) => records,
    },
    claims: (records) => ({
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
          (i, name) => pointer('', i, 'fieldValues', items[i]?.fieldValues.findIndex((v) => v.fieldName === name) ?? 0),
        ),
    }),
    answer: (records, work) => itemsAnswer(records, 201, work),
  };
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
