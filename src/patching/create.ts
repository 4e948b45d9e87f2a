import type { Context } from '../context.ts';
import { recordAccess } from '../domain/access.ts';
import { planCreate } from '../domain/create.ts';
import { createdRecord } from '../domain/record-json.ts';
import { failureOf, newWriteId, problemsOf, type LedgerOutcome } from '../core/ledger.ts';
import { rejected, unauthorized } from '../http/errors.ts';
import { CreateItem, type RecordOut } from '../schemas/record.ts';
import { fieldValueDuplicates, parseBatch, pointer } from '../schemas/parse.ts';
import { claimsOf, isUniqueViolation, uniqueClashes, uniqueViolation } from '../storage/record-index.ts';
import { isInvalidReference, referenceProblems } from '../storage/references.ts';
import { referenceClaims } from '../domain/references.ts';
import { CALL_DEADLINE_MS, TURN_TIMEOUT_MS } from '../writing/deadlines.ts';
import type { CreateInput } from '../record-rpc.ts';
import { claimKey, holding, wellShaped, type Written } from './idempotent.ts';

export type { CreateInput };

/**
 * Creating records, all or nothing: one read (none when the isolate remembers), one write that
 * starts with its ledger row. The write carries its own id, so a lost reply is settled by
 * sending it again: a repeat of a committed create fails on its ledger row, changes nothing,
 * and the records it made are read back from their `created` change rows.
 */
export async function createRecords(
  context: Context,
  input: CreateInput,
  writeId: string = newWriteId(),
): Promise<Written<RecordOut[]>> {
  const { recall, writes } = context;
  const parsed = input.body.ok
    ? parseBatch(CreateItem, input.body.value, (items) =>
        items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i))),
      )
    : undefined;
  const objectIds = parsed?.ok === true ? [...new Set(parsed.value.map((item) => item.objectId))] : [];
  const known = await recall.createContext(input.keyHash, objectIds);
  const caller = known.caller;
  if (caller === undefined) throw unauthorized();
  const items = wellShaped(input.body, parsed, input.idempotency);
  const held = await claimKey(context, input.idempotency, caller.userId, items, writeId);
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

    const now = Date.now();
    const deadline = now + TURN_TIMEOUT_MS;
    const statements = [
      writes.ledgerOfCreate(writeId, plan.value.length),
      ...writes.inserts(plan.value),
      ...(held.claim === undefined
        ? []
        : [
            writes.keyDone(
              held.claim,
              writeId,
              { status: 201, headers: { 'Content-Type': 'application/json' }, shape: 'items' },
              now,
            ),
          ]),
    ];
    const result = await writes.commit<{ id: number }>(statements, [writeId], deadline).catch(async (error) => {
      if (isInvalidReference(error)) {
        // A reference names no live record of its target that the caller can read: say which.
        const claims = plan.value.flatMap((record, i) => {
          const def = known.objects.get(record.objectId);
          return def === undefined ? [] : referenceClaims(def, items[i]?.fieldValues ?? [], [], pointer('', i));
        });
        throw rejected(await referenceProblems(context.env.DB, claims, caller.userId, ''));
      }
      if (!isUniqueViolation(error)) throw error;
      // A unique field's value is held already: say where, from what D1 holds now.
      const claims = claimsOf(
        plan.value,
        (id) => known.objects.get(id)?.fields,
        (i, name) => pointer('', i, 'fieldValues', items[i]?.fieldValues.findIndex((v) => v.fieldName === name) ?? 0),
      );
      const clashes = await uniqueClashes(context.env.DB, claims, (shared) => recordAccess(caller, shared) !== 'none');
      throw rejected(clashes.length > 0 ? clashes : [uniqueViolation('')]);
    });
    if ('committed' in result) {
      return {
        value: plan.value.map((record, i) =>
          createdRecord(record, result.committed[1 + i * 3]?.results[0]?.id as number),
        ),
      };
    }
    const outcome = result.finished.get(writeId) as LedgerOutcome;
    const failure = failureOf(outcome);
    if (failure !== undefined) throw rejected(problemsOf(outcome), failure.status);
    return { value: (await writes.answered(outcome, deadline + CALL_DEADLINE_MS)) ?? [] };
  });
}
