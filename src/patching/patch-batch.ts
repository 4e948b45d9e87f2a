import type { Context } from '../context.ts';
import { recordAccess } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { applyPatch, patchProblems } from '../domain/patch.ts';
import { busy, rejected, unauthorized, type HttpError, type InputProblem } from '../http/errors.ts';
import { duplicateProblems, fieldValueDuplicates, parseBatch, pointer } from '../schemas/parse.ts';
import { PatchItem, type PatchItemIn, type RecordOut } from '../schemas/record.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import { sleep } from '../storage/retry.ts';
import { isInvalidReference, referenceProblems } from '../storage/references.ts';
import { referenceClaims } from '../domain/references.ts';
import { claimsOf, isUniqueViolation, uniqueClashes, uniqueViolation } from '../storage/record-index.ts';
import { VersionConflict } from '../storage/writes.ts';
import { failureOf, newWriteId, problemsOf, type LedgerOutcome } from '../core/ledger.ts';
import { CALL_DEADLINE_MS, TURN_TIMEOUT_MS } from '../writing/deadlines.ts';
import type { PatchBatchInput } from '../record-rpc.ts';
import { claimKey, holding, wellShaped, type Written } from './idempotent.ts';

export type { PatchBatchInput };

/**
 * Patching records in a batch, all or nothing: one D1 read decides every element; then every
 * record's object gives the batch its turn, in parallel, handing over a newer state if it wrote
 * one; the new states are committed in one D1 batch guarded by versions (the unchanged
 * elements too, so every answer is the state at the commit) that starts with the batch's ledger
 * row. If any record moved on meanwhile (another batch, a patch), nothing was written:
 * re-read, recompute and commit again, for up to 10 seconds. If the batch's id is already
 * finished (its own earlier attempt, or a coordinator that ran it before a restart), its
 * answer is what the ledger says. Batches never hold an object, so they cannot deadlock.
 * `rerun`: the Worker sent this batch again, so it may have run before: a refusal is answered
 * only once the ledger holds it.
 */
export async function patchBatch(
  context: Context,
  input: PatchBatchInput,
  writeId: string = newWriteId(),
  rerun = false,
): Promise<Written<RecordOut[]>> {
  const arrival = Date.now();
  const { recall } = context;
  const parsed = input.body.ok ? parseBatch(PatchItem, input.body.value, batchDuplicates) : undefined;
  const ids = parsed?.ok === true ? parsed.value.map((item) => item.id) : [];
  const { caller, records, objects } = await recall.recordContext(input.keyHash, ids);
  if (caller === undefined) throw unauthorized();
  const items = wellShaped(input.body, parsed, input.idempotency);
  const held = await claimKey(context, input.idempotency, caller.userId, items, writeId);
  if ('replay' in held) return held;

  return holding(context, held.claim, async () => {
    const refuse = async (error: HttpError): Promise<Written<RecordOut[]>> => {
      const committed = rerun
        ? await context.writes.fence(writeId, error.status, arrival + CALL_DEADLINE_MS, error.errors)
        : undefined;
      if (committed === undefined || 'f' in committed) throw error;
      return { value: (await context.writes.answered(committed, arrival + CALL_DEADLINE_MS)) ?? [] };
    };
    const problems = items.flatMap((item, i) => {
      const record = records.get(item.id);
      const access = record ? recordAccess(caller, record.sharedWorkspaceIds, input.workspaceId) : 'none';
      return patchProblems(record, access, record && objects.get(record.objectId), item, pointer('', i));
    });
    if (problems.length > 0) return refuse(rejected(problems));

    const read = items.map((item) => records.get(item.id) as RecordOut);
    const turnsBy = arrival + CALL_DEADLINE_MS;
    const turns = await Promise.all(
      read.map((record) => context.recordObjects.turn(record.id, record.version, turnsBy)),
    );
    if (turns.some((turn) => !turn.granted)) return refuse(busy());
    const states = new Map(read.map((record, i) => [record.id, turns[i]?.newer ?? record]));
    const outcome = await commit(
      context,
      items,
      states,
      objects,
      caller.userId,
      held.claim,
      writeId,
      arrival + TURN_TIMEOUT_MS,
    );
    return 'refused' in outcome ? refuse(outcome.refused) : { value: outcome.records };
  });
}

function batchDuplicates(items: readonly unknown[]): InputProblem[] {
  return [
    ...duplicateProblems(items, 'id', ''),
    ...items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i))),
  ];
}

/**
 * Applies every element on the newest states and writes them all in one guarded D1 batch with
 * the batch's ledger row; the records answered, or the refusal to answer.
 */
async function commit(
  { writes, env }: Context,
  items: readonly PatchItemIn[],
  states: Map<number, RecordOut>,
  objects: ReadonlyMap<number, ObjectDef>,
  userId: number,
  claim: KeyClaim | undefined,
  writeId: string,
  deadline: number,
): Promise<{ records: RecordOut[] } | { refused: HttpError }> {
  for (let attempt = 1; ; attempt++) {
    const now = Date.now();
    const results = items.map((item, i) => {
      const base = states.get(item.id) as RecordOut;
      return {
        base,
        applied: applyPatch(base, objects.get(base.objectId) as ObjectDef, item, userId, now, pointer('', i)),
      };
    });
    const failures = results.flatMap(({ applied }) => (applied.ok ? [] : [applied.problem]));
    if (failures.length > 0) return { refused: rejected(failures) };
    const answered = results.map(({ applied }) => (applied.ok ? applied.record : (undefined as never)));
    const statements = [
      writes.ledger([{ id: writeId, outcome: { r: answered.map((record) => [record.id, record.version]) } }]),
      ...writes.batchWrites(
        results.map(({ base, applied }) =>
          applied.ok && applied.changed ? { base, record: applied.record } : { base },
        ),
        results.flatMap(({ base, applied }) =>
          applied.ok && applied.changed ? [{ type: 'updated' as const, prev: base, next: applied.record }] : [],
        ),
      ),
      ...(claim === undefined
        ? []
        : [
            writes.keyDone(
              claim,
              writeId,
              { status: 200, headers: { 'Content-Type': 'application/json' }, shape: 'items' },
              now,
            ),
          ]),
    ];
    try {
      const result = await writes.commit(statements, [writeId], deadline);
      if ('committed' in result) return { records: answered };
      const finished = result.finished.get(writeId) as LedgerOutcome;
      // Answered as it was first answered: the same status and problems.
      const failure = failureOf(finished);
      if (failure !== undefined)
        return { refused: failure.status === 503 ? busy() : rejected(problemsOf(finished), failure.status) };
      return { records: (await writes.answered(finished, deadline + CALL_DEADLINE_MS)) ?? [] };
    } catch (error) {
      if (isInvalidReference(error)) {
        // A reference the batch adds names no live record of its target that the caller can read.
        const claims = items.flatMap((item, i) => {
          const base = states.get(item.id) as RecordOut;
          const def = objects.get(base.objectId) as ObjectDef;
          return referenceClaims(def, item.fieldValues ?? [], base.fieldValues, pointer('', i));
        });
        return { refused: rejected(await referenceProblems(env.DB, claims, userId, '')) };
      }
      if (isUniqueViolation(error)) {
        // A unique field's value is held by another live record: say where (nothing was written).
        const claims = claimsOf(
          items.map((item) => ({
            id: item.id,
            objectId: (states.get(item.id) as RecordOut).objectId,
            fieldValues: item.fieldValues ?? [],
          })),
          (objectId) => objects.get(objectId)?.fields,
          (i, name) =>
            pointer('', i, 'fieldValues', items[i]?.fieldValues?.findIndex((f) => f.fieldName === name) ?? 0),
        );
        const clashes = await uniqueClashes(env.DB, claims);
        return { refused: rejected(clashes.length > 0 ? clashes : [uniqueViolation('')]) };
      }
      if (!(error instanceof VersionConflict)) throw error;
      if (Date.now() >= deadline) return { refused: busy() };
      // Lost to a concurrent write: a short jittered pause keeps retries from meeting again.
      await sleep(Math.random() * Math.min(50, 2 * attempt));
      for (const [id, record] of await writes.current(
        items.map((item) => item.id),
        deadline + CALL_DEADLINE_MS,
      ))
        states.set(id, record);
    }
  }
}
