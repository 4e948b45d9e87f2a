import type { Env } from '../env.ts';
import type { PatchAnswer, PatchCall, RecordObject, TurnAnswer } from '../record-object.ts';
import { isTransient, sleep } from '../storage/retry.ts';

type Stub = DurableObjectStub<RecordObject>;

/** The object of one record, placed near D1's primary when a location hint is configured. */
export function stubFor(env: Env, recordId: number): Stub {
  const hint = env.RECORD_OBJECT_LOCATION_HINT;
  const id = env.RECORDS.idFromName(String(recordId));
  return hint ? env.RECORDS.get(id, { locationHint: hint as DurableObjectLocationHint }) : env.RECORDS.get(id);
}

/**
 * Calls a record's object, retrying transient failures on a new stub (a failed stub is never
 * reused). Every call we make is safe to repeat: patches set absolute values (a repeat changes
 * nothing) and a turn only reads. `overloaded` is never retried.
 */
async function callObject<T>(env: Env, recordId: number, call: (stub: Stub) => Promise<unknown>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await call(stubFor(env, recordId))) as T;
    } catch (error) {
      if (attempt >= 3 || !isTransient(error)) throw error;
      await sleep(Math.random() * 20 * 2 ** attempt);
    }
  }
}

// The RPC stub types wrap results in Rpc.Result; these give them their plain shapes back.

export const patchInObject = (env: Env, call: PatchCall): Promise<PatchAnswer> =>
  callObject(env, call.recordId, (stub) => stub.patch(call));

export const turnInObject = (env: Env, recordId: number, version: number): Promise<TurnAnswer> =>
  callObject(env, recordId, (stub) => stub.turn(version));
