import type { Env } from '../env.ts';
import type { Meter } from '../storage/meter.ts';
import { busy, outcomeUnknown, type HttpError } from '../http/errors.ts';
import type { RecordObjectRpc } from '../record-rpc.ts';
import type { PatchAnswer, PatchCall, TurnAnswer } from '../writing/record-queue.ts';
import { isTransient, sleep } from '../storage/retry.ts';

type Stub = DurableObjectStub<RecordObjectRpc>;

/**
 * The object of one name (a record's id, or a coordinator's `near:<n>`), placed near D1's
 * primary when a location hint is configured.
 */
export function stubNamed(env: Env, name: string): Stub {
  const hint = env.RECORD_OBJECT_LOCATION_HINT;
  const id = env.RECORDS.idFromName(name);
  return hint ? env.RECORDS.get(id, { locationHint: hint as DurableObjectLocationHint }) : env.RECORDS.get(id);
}

/**
 * Calls a record's object, sending the call again on a new stub after a transient failure (a
 * failed stub is never reused) until `deadline`, then 503. Only calls that are safe to repeat
 * come here: a patch and a coordinated operation carry their write id, which the ledger
 * finishes once (a repeat is answered what the first committed); a turn only reads.
 * `overloaded` is never retried.
 */
export async function callObjectNamed<T>(
  env: Env,
  name: string,
  deadline: number,
  late: () => HttpError,
  call: (stub: Stub, again: boolean) => Promise<unknown>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await call(stubNamed(env, name), attempt > 1)) as T;
    } catch (error) {
      if (!isTransient(error)) throw error;
      if (Date.now() >= deadline) throw late();
      await sleep(Math.random() * Math.min(200, 10 * 2 ** attempt));
    }
  }
}

// The RPC stub types wrap results in Rpc.Result; these give them their plain shapes back.

export const patchInObject = (env: Env, call: PatchCall, deadline: number): Promise<PatchAnswer> =>
  callObjectNamed(env, String(call.recordId), deadline, outcomeUnknown, (stub) => stub.patch(call));

export const turnInObject = (env: Env, recordId: number, version: number, deadline: number): Promise<TurnAnswer> =>
  callObjectNamed(env, String(recordId), deadline, busy, (stub) => stub.turn(recordId, version));

/** How a write reaches the objects of the records it writes; their work is counted in `meter`. */
export interface RecordObjects {
  /** Applies one patch of a record in its turn. */
  patch(call: PatchCall, deadline: number): Promise<PatchAnswer>;
  /** A batch's turn in a record's order. */
  turn(recordId: number, version: number, deadline: number): Promise<TurnAnswer>;
}

/** The record object a coordinator runs in: its own record's calls go straight to it. */
export interface HomeObject {
  recordId: number;
  patch(call: PatchCall): Promise<PatchAnswer>;
  turn(recordId: number, version: number): Promise<TurnAnswer>;
}

/**
 * Each record's object over RPC; from inside a record's object (`home`), that record's patches
 * and turns go to its queue directly, not out and back through its own stub.
 */
export function recordObjects(env: Env, meter: Meter, home?: HomeObject): RecordObjects {
  return {
    patch: (call, deadline) =>
      home !== undefined && call.recordId === home.recordId
        ? meter.within(() => home.patch(call))
        : meter.durable(() => patchInObject(env, call, deadline)),
    turn: (recordId, version, deadline) =>
      home !== undefined && recordId === home.recordId
        ? meter.within(() => home.turn(recordId, version))
        : meter.durable(() => turnInObject(env, recordId, version, deadline)),
  };
}
