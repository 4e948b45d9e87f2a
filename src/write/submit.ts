import type { Context } from '../context.ts';
import { tenantOfId } from '../domain/tenant.ts';
import { busy, outcomeUnknown } from '../http/errors.ts';
import { problemAnswer } from './answer.ts';
import { CALL_DEADLINE_MS } from './deadlines.ts';
import { closeWrite, runWrite } from './engine.ts';
import { forgetRoute } from '../tenancy/routes.ts';
import { callObject } from './record-turns.ts';
import { firstRecordOf, type WriteAnswer, type WriteCall } from './write.ts';

/**
 * The Worker's side of a write: where it runs and how it gets there. Where is decided by the
 * write alone, never by what an isolate remembers. A write of one D1 round trip (a create
 * without a key) runs here. Every other needs several round trips (a claim, a read, turns) and
 * runs near D1, placed there by the location hint: in the object of the first record it names,
 * whose own turn it then takes without a call, else in one of a few shared coordinators. So a
 * caller far from D1 pays one long haul either way.
 */

/** How many objects share the writes that name no record (keyed creates, upserts). */
const COORDINATORS = 16;

/**
 * The object a write runs in, or undefined for the Worker. A write sent again goes to the same one.
 * A record of another tenant is never its place: a write naming one first runs in an object no
 * record has, as one naming a missing record does, and the other tenant's object never sees it.
 */
export function placeOf(call: WriteCall): string | undefined {
  const first = firstRecordOf(call.write);
  if (first !== undefined)
    return tenantOfId(first) === call.tenant.id ? String(first) : `elsewhere:${call.tenant.id}:${first}`;
  if (call.write.kind === 'create' && call.key === undefined) return undefined;
  return `writes:${parseInt(call.id.slice(-8), 16) % COORDINATORS}`;
}

/** How long the Worker tries to close a write whose outcome its object could not learn. */
const CLOSE_DEADLINE_MS = 5_000;

/** Runs a write where it belongs and gives back its answer. */
export async function submit(context: Context, call: WriteCall): Promise<WriteAnswer> {
  const place = placeOf(call);
  const answer = place === undefined ? await runWrite(context, call) : await runIn(context, place, call);
  if (answer?.routeStale === true) forgetRoute(call.tenant.id);
  return answer === undefined || answer.outcomeUnknown === true ? closeUnknown(context, call) : answer;
}

/** The write run in the object named `place`; undefined when it never answered in time. */
async function runIn(context: Context, place: string, call: WriteCall): Promise<WriteAnswer | undefined> {
  const late = outcomeUnknown();
  return context.meter
    .durable(() =>
      callObject<WriteAnswer>(
        context.env,
        place,
        Date.now() + CALL_DEADLINE_MS,
        () => late,
        (stub, again) => stub.run(again ? { ...call, again: true } : call),
      ),
    )
    .catch((error: unknown) => {
      if (error === late) return undefined;
      throw error;
    });
}

/**
 * A write whose outcome its object could not learn in time: the Worker closes its id in the
 * ledger as a 503 itself. If that commits, the write can never commit later (and its key, if it
 * claimed one, is free at once): "busy, nothing was written" is then the truth. If the id was
 * finished already, or storage cannot be reached either, the outcome stays unknown, and a retry
 * with the same Idempotency-Key learns it.
 */
async function closeUnknown(context: Context, call: WriteCall): Promise<WriteAnswer> {
  const closed = await closeWrite(context, call.id, 503, [], Date.now() + CLOSE_DEADLINE_MS).catch(
    () => 'unreachable' as const,
  );
  return problemAnswer(closed === undefined ? busy() : outcomeUnknown(), call.requestId, context.meter.work());
}
