import type { Context } from '../context.ts';
import type { LedgerOutcome } from '../core/ledger.ts';
import { unhandled } from '../core/result.ts';
import { busy, isOutcomeUnknown, isTenantNotHere, outcomeUnknown, rejected } from '../http/errors.ts';
import { asHttpError } from '../http/problem.ts';
import { itemsAnswer, problemAnswer, recordAnswer } from './answer.ts';
import { batchWrite } from './batch.ts';
import { createWrite } from './create.ts';
import { TURN_TIMEOUT_MS } from './deadlines.ts';
import { patchWrite } from './patch.ts';
import { upsertWrite } from './upsert.ts';
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
    // This database refuses every write of a tenant that left it: no run of this write commits here.
    if (isTenantNotHere(error)) return { ...(await tenantLeft(context, call, error)), routeStale: true };
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
      return createWrite(context, call, write);
    case 'patch':
      return patchWrite(context, call, write);
    case 'batch':
      return batchWrite(context, call, write);
    case 'upsert':
      return upsertWrite(context, call, write);
    default:
      return unhandled(write, 'write');
  }
}

/**
 * The tenant left this database as the write ran: refused unwritten, unless an earlier try of the
 * same id committed here before the departure (its reply was lost, and the try sent again met
 * the departure first). The ledger here, which nothing changes any more, tells which.
 */
async function tenantLeft(context: Context, call: WriteCall, error: unknown): Promise<WriteAnswer> {
  const outcome = await context.writes
    .outcomes([call.id], Date.now() + TURN_TIMEOUT_MS)
    .then((outcomes) => outcomes.get(call.id))
    .catch(() => 'unreachable' as const);
  if (outcome === 'unreachable') return problemAnswer(outcomeUnknown(), call.requestId, work(context));
  if (outcome === undefined) return problemAnswer(error, call.requestId, work(context));
  return answerOfOutcome(context, call.write, outcome, call.requestId);
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
