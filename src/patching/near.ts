import { createContext, type Context } from '../context.ts';
import type { CreateInput, NearAnswer, NearCall, NearRun, PatchBatchInput, PatchOneInput } from '../record-rpc.ts';
import type { Env } from '../env.ts';
import { busy, HttpError, isOutcomeUnknown, outcomeUnknown } from '../http/errors.ts';
import { asHttpError } from '../http/problem.ts';
import type { RecordOut } from '../schemas/record.ts';
import { newWriteId } from '../core/ledger.ts';
import { unhandled } from '../core/result.ts';
import { CALL_DEADLINE_MS } from '../writing/deadlines.ts';
import { createRecords } from './create.ts';
import { replayOf, type Written } from './idempotent.ts';
import { callObjectNamed, type HomeObject } from './objects.ts';
import { patchBatch } from './patch-batch.ts';
import { patchOne } from './patch-one.ts';

/**
 * Writes that need several round trips to D1 and objects run where those are near: a batch (its
 * read, its turns, its write), a patch of a record the Worker does not remember (its read, then
 * its write) and any write with an Idempotency-Key (its claim, then its write). The Worker,
 * placed near its caller, hands the whole operation to a record object, placed near D1's
 * primary by the location hint, which runs the very same code with its own bindings. So the
 * caller pays one long-haul round trip, not three.
 *
 * The call's id is the write's id. A lost answer is settled by sending the call again under the
 * same id: an object that still runs it joins that run; one that restarted runs it again as a
 * re-run, whose commit fails on the write's ledger row if the first run committed (and answers
 * what it committed), and whose refusals are answered only once the ledger holds them.
 */

/** How long the Worker tries to settle a call whose outcome its coordinator could not learn. */
const FENCE_DEADLINE_MS = 5_000;

/** How many objects share the coordination of keyed creates. */
const COORDINATORS = 16;

/**
 * Runs `run` in a coordinating object near D1 and gives its outcome back as if run here: the
 * object of the record it writes (of a batch's first record), warm whenever that record is in
 * use, or for a create one of a few shared objects. A resent call goes to the same object.
 */
export async function nearD1<T extends RecordOut | RecordOut[]>(
  context: Context,
  run: NearRun,
  recordId: number | undefined,
): Promise<Written<T>> {
  const callId = newWriteId();
  const name = recordId === undefined ? `near:${parseInt(callId.slice(-8), 16) % COORDINATORS}` : String(recordId);
  const call: NearCall = recordId === undefined ? { callId, run } : { callId, run, home: recordId };
  const late = outcomeUnknown();
  const answer = await context.meter
    .durable(() =>
      callObjectNamed<NearAnswer>(
        context.env,
        name,
        Date.now() + CALL_DEADLINE_MS,
        () => late,
        (stub, again) => stub.near(again ? { ...call, resent: true } : call),
      ),
    )
    .catch(async (error: unknown) => {
      if (error === late) throw await settleUnknown(context, callId);
      throw error;
    });
  if (answer.error !== undefined) {
    const { status, code, title, detail, errors, headers } = answer.error;
    const error = new HttpError(status, { code, title, detail, errors, headers });
    throw isOutcomeUnknown(error) ? await settleUnknown(context, callId) : error;
  }
  if (answer.replay !== undefined) return { replay: replayOf(answer.replay) };
  return { value: answer.value as T };
}

/**
 * A call whose outcome its coordinator could not learn in time: the Worker finishes its write id
 * in the ledger as a 503 itself. If that commits, the write can never commit later (and its key,
 * if it claimed one, is free at once): "busy, nothing was written" is then the truth. If the id
 * was finished already, or storage cannot be reached either, the outcome stays unknown.
 */
async function settleUnknown(context: Context, callId: string): Promise<HttpError> {
  const finished = await context.writes.fence(callId, 503, Date.now() + FENCE_DEADLINE_MS).catch(() => 'unknown');
  return finished === undefined ? busy() : outcomeUnknown();
}

/**
 * A call sent again may have committed in an earlier run, whatever this run met (a deadline, a
 * revoked key, a record deleted since): its refusal is answered only once the ledger holds it
 * for the write's id. If the id was finished as committed, or storage cannot say, the outcome is
 * unknown to this run: a retry with the same Idempotency-Key learns it.
 */
async function settledRefusal(context: Context, callId: string, refusal: HttpError): Promise<HttpError> {
  if (refusal.status >= 500 && refusal.status !== 503) return refusal;
  const fenced = await context.writes
    .fence(callId, refusal.status, Date.now() + FENCE_DEADLINE_MS, refusal.errors ?? [])
    .catch(() => 'unreachable' as const);
  if (fenced === undefined) return isOutcomeUnknown(refusal) ? busy() : refusal;
  return fenced !== 'unreachable' && 'f' in fenced ? refusal : outcomeUnknown();
}

/** In the coordinating object: runs the operation with the object's bindings. */
export async function runNear(
  env: Env,
  waitUntil: (promise: Promise<unknown>) => void,
  call: NearCall,
  home?: HomeObject,
): Promise<NearAnswer> {
  const context = createContext(env, call.callId, { waitUntil }, undefined, home);
  try {
    const written = await dispatch(context, call);
    const work = context.meter.work();
    if ('value' in written) return { value: written.value, work };
    const { status, headers, body } = {
      status: written.replay.status,
      headers: Object.fromEntries(written.replay.headers),
      body: await written.replay.text(),
    };
    delete headers['idempotent-replayed'];
    return { replay: { status, headers, body }, work };
  } catch (error) {
    // Shaped here, where the error's class and stack are: only plain data crosses back.
    const refusal = asHttpError(error, call.callId);
    const { status, code, title, detail, errors, headers } =
      call.resent === true ? await settledRefusal(context, call.callId, refusal) : refusal;
    return {
      error: {
        status,
        code,
        title,
        ...(detail === undefined ? {} : { detail }),
        ...(errors === undefined ? {} : { errors }),
        ...(headers === undefined ? {} : { headers }),
      },
      work: context.meter.work(),
    };
  }
}

function dispatch(context: Context, { callId, run, resent }: NearCall): Promise<Written<RecordOut | RecordOut[]>> {
  switch (run.op) {
    case 'patchBatch':
      return patchBatch(context, run.input, callId, resent === true);
    case 'patchOne':
      return patchOne(context, run.input, callId, resent === true);
    case 'create':
      return createRecords(context, run.input, callId);
    default:
      return unhandled(run, 'operation');
  }
}

// Where each write runs. Only for a caller this isolate knows (it authenticated lately): a
// request from an unknown or wrong key is refused where it arrived, and never makes an object
// exist. A body that did not even parse is refused where it arrived too.

/** A batch always takes several trips: it runs near D1. */
export const placedPatchBatch = (context: Context, input: PatchBatchInput): Promise<Written<RecordOut[]>> =>
  input.body.ok && context.recall.knowsCaller(input.keyHash)
    ? nearD1(context, { op: 'patchBatch', input }, firstId(input.body.value))
    : patchBatch(context, input);

/** Where a batch is coordinated is only a choice of place: an unparsed body's first id will do. */
function firstId(body: unknown): number | undefined {
  const id = Array.isArray(body) ? (body[0] as { id?: unknown } | undefined)?.id : undefined;
  return Number.isSafeInteger(id) && (id as number) > 0 ? (id as number) : undefined;
}

/**
 * A patch, delete or restore takes one trip from the Worker when it remembers the record, and
 * runs near D1 when it claims a key first. Either only when memory says the caller sees the
 * record: any other (one it cannot see, one nobody used lately, an id never issued) is read by
 * the Worker first, so a record the caller cannot see costs what a missing one costs (one D1
 * read, no object call) and no answer tells whether someone else used it lately.
 */
export const placedPatchOne = (context: Context, input: PatchOneInput): Promise<Written<RecordOut>> =>
  input.body.ok &&
  input.idempotency.key !== undefined &&
  context.recall.seesRecord(input.keyHash, input.recordId, input.workspaceId)
    ? nearD1(context, { op: 'patchOne', input }, input.recordId)
    : patchOne(context, input);

/** A create takes one trip from the Worker (when it remembers the caller) unless it claims a key first. */
export const placedCreate = (context: Context, input: CreateInput): Promise<Written<RecordOut[]>> =>
  input.body.ok && input.idempotency.key !== undefined && context.recall.knowsCaller(input.keyHash)
    ? nearD1(context, { op: 'create', input }, undefined)
    : createRecords(context, input);

export type { NearAnswer, NearCall, NearRun };
