import type { Context } from '../context.ts';
import type { LedgerOutcome } from '../core/ledger.ts';
import { unhandled } from '../core/result.ts';
import { busy, isOutcomeUnknown, outcomeUnknown, rejected, unauthorized } from '../http/errors.ts';
import { asHttpError } from '../http/problem.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import { itemsAnswer, problemAnswer, recordAnswer, replayAnswer } from './answer.ts';
import { readForBatch, patchInTurns } from './batch.ts';
import { claimKey, releaseKey, storedAnswer } from './claim.ts';
import { commitCreates, planCreates } from './create.ts';
import { TURN_TIMEOUT_MS } from './deadlines.ts';
import { patchInTurn, readForPatch } from './patch.ts';
import { readForUpsert, upsertInTurns } from './upsert.ts';
import type { Write, WriteAnswer, WriteCall } from './write.ts';

/**
 * The write engine: every write of records runs here, the same steps in the same order, and
 * ends in one answer. Read what the write is decided on (the caller first: none is 401), claim
 * its Idempotency-Key (a completed key replays its first answer), plan it, take the turns of
 * the records it changes, commit it in one D1 batch that starts with its ledger row, and answer
 * it, or explain why not. A refusal is an answer like any other, rendered here; nothing is
 * thrown across an object call for it.
 */
export async function runWrite(context: Context, call: WriteCall): Promise<WriteAnswer> {
  try {
    return await steps(context, call);
  } catch (error) {
    return call.again === true
      ? refusalSentAgain(context, call, error)
      : problemAnswer(error, call.requestId, work(context));
  }
}

const work = (context: Context) => context.meter.work();

function steps(context: Context, call: WriteCall): Promise<WriteAnswer> {
  const { write } = call;
  switch (write.kind) {
    case 'create':
      return (async () => {
        const read = await context.cached.createContext(call.keyHash, [...new Set(write.items.map((i) => i.objectId))]);
        const caller = read.caller;
        if (caller === undefined) throw unauthorized();
        return keyed(context, call, caller.userId, write.items, async (claim) => {
          const records = await planCreates(context, call.keyHash, write.items, { ...read, caller });
          const created = await commitCreates(context, call.id, write.items, records, { ...read, caller }, claim);
          return itemsAnswer(created, 201, work(context));
        });
      })();
    case 'patch':
      return (async () => {
        const known = await readForPatch(context, call, write);
        return keyed(context, call, known.caller?.userId ?? 0, write.patch, async (claim) =>
          recordAnswer(await patchInTurn(context, call, write, known, claim), work(context)),
        );
      })();
    case 'batch':
      return (async () => {
        const read = await readForBatch(context, call, write);
        return keyed(context, call, read.caller?.userId ?? 0, write.items, async (claim) =>
          itemsAnswer(await patchInTurns(context, call, write, read, claim), 200, work(context)),
        );
      })();
    case 'upsert':
      return (async () => {
        const read = await readForUpsert(context, call, write);
        return keyed(context, call, read.caller.userId, write.body, async (claim) => {
          const { records, results } = await upsertInTurns(context, call, write, read, claim);
          return itemsAnswer(records, 200, work(context), results);
        });
      })();
    default:
      return unhandled(write, 'write');
  }
}

/**
 * Claims the write's key for the caller: a completed key answers its first answer again (409
 * while another request runs it, 422 for another body); else runs `write` holding the claim
 * and gives the claim back if it fails, so a retry with the key runs afresh.
 */
async function keyed(
  context: Context,
  call: WriteCall,
  userId: number,
  body: unknown,
  write: (claim: KeyClaim | undefined) => Promise<WriteAnswer>,
): Promise<WriteAnswer> {
  const claimed = await claimKey(context, call.key, userId, body, call.id);
  if ('done' in claimed) return replayAnswer(await storedAnswer(context, claimed.done), work(context));
  try {
    return await write(claimed.claim);
  } catch (error) {
    await releaseKey(context, claimed.claim);
    throw error;
  }
}

/**
 * A write sent again may have committed in an earlier run, whatever this run met (a deadline,
 * a revoked key, a record deleted since): its refusal is answered only once the ledger holds it
 * for the write's id; if the id was finished as committed, what it committed is the answer.
 */
async function refusalSentAgain(context: Context, call: WriteCall, error: unknown): Promise<WriteAnswer> {
  const refusal = asHttpError(error, call.requestId);
  if (refusal.status >= 500 && refusal.status !== 503) return problemAnswer(refusal, call.requestId, work(context));
  const deadline = Date.now() + TURN_TIMEOUT_MS;
  const closed = await context.writes
    .closeAsFailed(call.id, refusal.status, deadline, refusal.errors ?? [])
    .catch(() => 'unreachable' as const);
  if (closed === 'unreachable') return problemAnswer(outcomeUnknown(), call.requestId, work(context));
  const answer =
    closed === undefined
      ? problemAnswer(isOutcomeUnknown(refusal) ? busy() : refusal, call.requestId, work(context))
      : await answerOfOutcome(context, call.write, closed, call.requestId);
  return { ...answer, closed: true };
}

/** What a finished write id answers, rebuilt from its ledger row: what it committed, or its failure. */
export async function answerOfOutcome(
  context: Context,
  write: Write,
  outcome: LedgerOutcome,
  requestId: string,
): Promise<WriteAnswer> {
  try {
    if ('f' in outcome) throw rejected(outcome.e ?? (outcome.p === undefined ? [] : [outcome.p]), outcome.f);
    const records = (await context.writes.answered(outcome, Date.now() + TURN_TIMEOUT_MS)) ?? [];
    if (write.kind === 'patch') {
      const [record] = records;
      if (record === undefined) throw outcomeUnknown();
      return recordAnswer(record, work(context));
    }
    const results = 'r' in outcome ? outcome.u : undefined;
    return itemsAnswer(records, write.kind === 'create' ? 201 : 200, work(context), results);
  } catch (error) {
    return problemAnswer(error, requestId, work(context));
  }
}
