import type { Context } from '../context.ts';
import { failureOf, problemsOf, type LedgerOutcome } from '../core/ledger.ts';
import { unhandled } from '../core/result.ts';
import {
  busy,
  HttpError,
  isOutcomeUnknown,
  isTenantNotHere,
  outcomeUnknown,
  rejected,
  type InputProblem,
} from '../http/errors.ts';
import { asHttpError } from '../http/problem.ts';
import type { RecordOut } from '../schemas/record.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import { AGAIN, recomputing } from '../storage/retry.ts';
import { VersionConflict, type RecordWrites } from '../storage/writes.ts';
import { itemsAnswer, problemAnswer, recordAnswer } from './answer.ts';
import { batchRun } from './batch.ts';
import { withKey } from './claim.ts';
import { createRun } from './create.ts';
import { CALL_DEADLINE_MS, TURN_TIMEOUT_MS } from './deadlines.ts';
import type { Attempts, InBatch, InTurn, WriteRun } from './kind.ts';
import type { PatchAnswer } from './record-queue.ts';
import { patchRun } from './patch.ts';
import { explained, explainedTurn } from './refusals.ts';
import { upsertRun } from './upsert.ts';
import type { Write, WriteAnswer, WriteCall } from './write.ts';

/**
 * The write engine: the one runner of every write of records. Each kind only reads what it is
 * decided on and makes a value of its own decision and statements (`WriteRun`); the runner
 * does the rest the same way for all: claims the Idempotency-Key (a completed key replays its
 * first answer), decides, commits one D1 batch that starts with the write's ledger row (or hands
 * a patch to its record's turn), recomputes after a lost race, explains D1's refusals, closes the
 * ledger row of a refusal a run sent again met, and answers. A refusal is an answer like any
 * other, rendered here; nothing is thrown across an object call for it.
 */
export async function runWrite(context: Context, call: WriteCall): Promise<WriteAnswer> {
  try {
    return await run(context, call, await read(context, call));
  } catch (error) {
    // This database refuses every write of a tenant that left it: no run of this write commits here.
    if (isTenantNotHere(error)) return { ...(await tenantLeft(context, call, error)), routeStale: true };
    return call.again === true
      ? refusalSentAgain(context, call, error)
      : problemAnswer(error, call.requestId, work(context));
  }
}

const work = (context: Context) => context.meter.work();

/** What the write is decided on, read by its kind: the run it makes. */
function read(context: Context, call: WriteCall): Promise<WriteRun<unknown, unknown>> {
  const { write } = call;
  switch (write.kind) {
    case 'create':
      return createRun(context, call, write) as Promise<WriteRun<unknown, unknown>>;
    case 'patch':
      return patchRun(context, call, write) as Promise<WriteRun<unknown, unknown>>;
    case 'batch':
      return batchRun(context, call, write) as Promise<WriteRun<unknown, unknown>>;
    case 'upsert':
      return upsertRun(context, call, write) as Promise<WriteRun<unknown, unknown>>;
    default:
      return unhandled(write, 'write');
  }
}

/** Runs the write, and tells it when it is over. */
async function run<Plan, Done>(context: Context, call: WriteCall, write: WriteRun<Plan, Done>): Promise<WriteAnswer> {
  try {
    return await attempted(context, call, write);
  } finally {
    write.settled?.();
  }
}

/** Claims the key, then decides and commits until an attempt is not lost to another writer. */
function attempted<Plan, Done>(context: Context, call: WriteCall, write: WriteRun<Plan, Done>): Promise<WriteAnswer> {
  return withKey(context, call, write.userId, write.body, async (claim) => {
    const deadline = Date.now() + TURN_TIMEOUT_MS;
    const done = await recomputing(
      async () => {
        const plan = await write.decide();
        if (plan === AGAIN) return AGAIN;
        const { commit } = write;
        return 'turn' in commit
          ? inTurn(context, call.id, write, commit, plan, claim)
          : commitBatch(context, call.id, write, commit, plan, claim, deadline);
      },
      { deadline, late: busy },
    );
    return write.answer(done, work(context));
  });
}

/**
 * The plan's one D1 batch, made once: what it did, what an earlier run of the same id did, or
 * AGAIN when records moved on meanwhile (nothing was written). D1's refusal is explained.
 */
function commitBatch<Plan, Done>(
  context: Context,
  writeId: string,
  write: WriteRun<Plan, Done>,
  commit: InBatch<Plan, Done>,
  plan: Plan,
  claim: KeyClaim | undefined,
  deadline: number,
): Promise<Done | typeof AGAIN> {
  return commitOnce(context.writes, writeId, commit, plan, claim, deadline, async (error) => {
    throw (await explained(context, error, write.claims(plan))) ?? error;
  });
}

async function commitOnce<Plan, Done>(
  writes: RecordWrites,
  writeId: string | undefined,
  commit: InBatch<Plan, Done>,
  plan: Plan,
  claim: KeyClaim | undefined,
  deadline: number,
  unexplained: (error: unknown) => Promise<never>,
): Promise<Done | typeof AGAIN> {
  const key =
    claim === undefined || commit.keyAnswer === undefined
      ? undefined
      : { claim, answer: commit.keyAnswer, now: Date.now() };
  const ids = writeId === undefined ? [] : [writeId];
  try {
    const result = await writes.commit(commit.statements(plan, key), ids, deadline);
    if ('committed' in result) return commit.committed(plan, result.committed);
    const outcome = result.finished.get(writeId ?? '') as LedgerOutcome;
    const failure = failureOf(outcome);
    if (failure !== undefined) throw rejected(problemsOf(outcome), failure.status);
    const records = (await writes.answered(outcome, deadline + CALL_DEADLINE_MS)) ?? [];
    if (commit.replayed === undefined) throw new Error('a write with no ledger row was found finished');
    return commit.replayed(outcome, records);
  } catch (error) {
    if (error instanceof VersionConflict) {
      await commit.lost?.(plan, deadline);
      return AGAIN;
    }
    if (error instanceof HttpError) throw error;
    const answered = await commit.refused?.(plan, error);
    if (answered !== undefined) return answered;
    return unexplained(error);
  }
}

/**
 * A write no request makes (an import's chunk): no key, no ledger row (a guard of its own makes
 * a repeat change nothing), its attempts run as every other write's; a refusal of D1's its kind
 * does not answer itself is thrown as D1 made it.
 */
export function runAttempts<Plan, Done>(
  writes: RecordWrites,
  attempts: Attempts<Plan, Done> & { commit: InBatch<Plan, Done> },
  deadline: number,
): Promise<Done> {
  return recomputing(
    async () => {
      const plan = await attempts.decide();
      if (plan === AGAIN) return AGAIN;
      return commitOnce(writes, undefined, attempts.commit, plan, undefined, deadline, (error) =>
        Promise.reject(error),
      );
    },
    { deadline },
  );
}

/**
 * The plan applied in its record's turn: what it did, else its refusal explained. A refusal the
 * ledger does not hold yet is closed first: if the write id committed in an earlier run (its
 * reply lost, a twin ran it), what it committed is the answer, never the refusal.
 */
async function inTurn<Plan, Done>(
  context: Context,
  writeId: string,
  write: WriteRun<Plan, Done>,
  commit: InTurn<Plan, Done>,
  plan: Plan,
  claim: KeyClaim | undefined,
): Promise<Done> {
  let answer = await commit.turn(plan, claim);
  if (answer.closed === false) {
    const problems = answer.problem === undefined ? [] : [answer.problem];
    const outcome = await closeWrite(context, writeId, answer.status, problems);
    if (outcome !== undefined) {
      const failure = failureOf(outcome);
      if (failure === undefined) return commit.applied(await answeredOne(context, outcome));
      // What the ledger holds is the answer, the queue's problem with it or not.
      answer = { work: answer.work, ...(failure as Pick<PatchAnswer, 'status' | 'problem'>) };
    }
  }
  if (answer.status === 200 && answer.record !== undefined) return commit.applied(answer.record);
  throw await explainedTurn(context, answer, write.claims(plan));
}

/**
 * Closes write `id` in the ledger as refused with `status`, so no run of it can commit later: the
 * only place a record write's refusal is closed. Undefined when it was closed now; the outcome the
 * ledger held when the id was finished already (it may have committed). Storage out of reach:
 * the outcome is unknown.
 */
export async function closeWrite(
  context: Context,
  id: string,
  status: number,
  problems: readonly InputProblem[] = [],
  deadline = Date.now() + TURN_TIMEOUT_MS,
): Promise<LedgerOutcome | undefined> {
  try {
    return await context.writes.closeAsFailed(id, status, deadline, problems);
  } catch {
    throw outcomeUnknown();
  }
}

/** The one record a finished write of one record answered. */
async function answeredOne(context: Context, outcome: LedgerOutcome): Promise<RecordOut> {
  const [record] = await context.writes
    .answered(outcome, Date.now() + TURN_TIMEOUT_MS)
    .then((records) => records ?? [])
    .catch(() => []);
  // Committed, but what it committed cannot be read now: its outcome is as good as unknown.
  if (record === undefined) throw outcomeUnknown();
  return record;
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
  const closed = await closeWrite(context, call.id, refusal.status, refusal.errors ?? []).catch(
    () => 'unreachable' as const,
  );
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
