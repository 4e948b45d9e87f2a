import type { Env } from '../env.ts';
import { busy } from '../http/errors.ts';
import type { RecordObjectRpc } from '../record-rpc.ts';
import type { Meter } from '../storage/meter.ts';
import { retrying } from '../storage/retry.ts';
import type { PatchAnswer, PatchCall, RecordQueue, TurnAnswer } from './record-queue.ts';

type Stub = DurableObjectStub<RecordObjectRpc>;

/**
 * The object of one name (a record's id, or a coordinator's `writes:<n>`), placed near D1's
 * primary when a location hint is configured.
 */
export function stubNamed(env: Env, name: string): Stub {
  const hint = env.RECORD_OBJECT_LOCATION_HINT;
  const id = env.RECORDS.idFromName(name);
  return hint ? env.RECORDS.get(id, { locationHint: hint as DurableObjectLocationHint }) : env.RECORDS.get(id);
}

/**
 * Calls an object, sending the call again on a new stub after a transient failure (a failed stub
 * is never reused) until `deadline`, then `late()`. Only calls that are safe to repeat come here:
 * a write carries its id, which the ledger finishes once; a turn only waits. `again` tells the
 * callee that an earlier try may have run.
 */
export function callObject<T>(
  env: Env,
  name: string,
  deadline: number,
  late: () => unknown,
  call: (stub: Stub, again: boolean) => Promise<unknown>,
): Promise<T> {
  return retrying((attempt) => call(stubNamed(env, name), attempt > 1) as Promise<T>, { deadline, late });
}

/** How a write reaches the records it changes, in their turn; their work is counted in the write's meter. */
export interface RecordTurns {
  /** Applies one patch of a record in its turn (only from inside that record's object). */
  patch(call: PatchCall, deadline: number): Promise<PatchAnswer>;
  /** A batch's turn in a record's order. */
  turn(recordId: number, version: number, deadline: number): Promise<TurnAnswer>;
}

/** The record whose object a write runs in, and its queue. */
export interface OwnRecord {
  recordId: number;
  queue: RecordQueue;
}

/**
 * The turns of records: a record's own queue when the write runs in its object (no call), any
 * other record's object over RPC. A patch of one record always runs in that record's object.
 */
export function recordTurns(env: Env, meter: Meter, own?: OwnRecord): RecordTurns {
  return {
    patch: (call) => {
      if (own === undefined || call.recordId !== own.recordId)
        throw new Error(`record ${call.recordId}'s patch must run in its own object`);
      return meter.within(() => own.queue.patch(call));
    },
    turn: (recordId, version, deadline) =>
      own !== undefined && recordId === own.recordId
        ? meter.within(() => own.queue.turn(version))
        : meter.durable(() =>
            callObject<TurnAnswer>(env, String(recordId), deadline, busy, (stub) => stub.turn(recordId, version)),
          ),
  };
}
