import type { Context } from '../context.ts';
import type { Settled } from '../core/settle.ts';
import { planCreate } from '../domain/create.ts';
import { assemble, createdRecordTemplate } from '../domain/record-json.ts';
import { rejected, unauthorized } from '../http/errors.ts';
import { CreateItem, type RecordOut } from '../schemas/record.ts';
import { fieldValueDuplicates, parseBatch, pointer } from '../schemas/parse.ts';
import { TURN_TIMEOUT_MS } from '../turns.ts';
import { claimKey, holding, wellShaped, type KeyRequest, type Written } from './idempotent.ts';

export interface CreateInput {
  keyHash: string;
  body: Settled<unknown>;
  idempotency: KeyRequest;
}

/**
 * SPEC 4.1, all or nothing: one read (none when the isolate remembers), one write. The write
 * carries its own id, so a lost reply is settled by sending it again: a repeat of a committed
 * create changes nothing and the records it made are read back from its change rows.
 */
export async function createRecords(context: Context, input: CreateInput): Promise<Written<RecordOut[]>> {
  const { recall, writes } = context;
  const parsed = input.body.ok
    ? parseBatch(CreateItem, input.body.value, (items) => items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i))))
    : undefined;
  const objectIds = parsed?.ok === true ? [...new Set(parsed.value.map((item) => item.objectId))] : [];
  const known = await recall.createContext(input.keyHash, objectIds);
  const caller = known.caller;
  if (caller === undefined) throw unauthorized();
  const items = wellShaped(input.body, parsed, input.idempotency);
  const held = await claimKey(context, input.idempotency, caller.userId, items);
  if ('replay' in held) return held;

  return holding(context, held.claim, async () => {
    let plan = planCreate(caller, items, known.objects, Date.now());
    if (!plan.ok && known.remembered) {
      // Refuse only on what D1 says now: the key, a membership or a field may be new.
      const fresh = await recall.createContext(input.keyHash, objectIds, true);
      if (fresh.caller === undefined) throw unauthorized();
      plan = planCreate(fresh.caller, items, fresh.objects, Date.now());
    }
    if (!plan.ok) throw rejected(plan.problems);

    const writeId = crypto.randomUUID();
    const now = Date.now();
    const statements = [
      ...writes.inserts(plan.value, writeId),
      ...(held.claim === undefined ? [] : [writes.answerOfCreate(held.claim, writeId, { 'Content-Type': 'application/json' }, now)]),
    ];
    const results = await writes.commit<{ id: number }>(statements, now + TURN_TIMEOUT_MS);
    const texts =
      results === undefined
        ? await writes.createdBy(writeId)
        : plan.value.map((record, i) => assemble(createdRecordTemplate(record), results[i * 3]?.results[0]?.id as number));
    return { value: texts.map((text) => JSON.parse(text) as RecordOut) };
  });
}
