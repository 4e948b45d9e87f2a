import type { Env } from '../env.ts';
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
  const id = idNamed(env.RECORDS, name);
  return hint ? env.RECORDS.get(id, { locationHint: hint as DurableObjectLocationHint }) : env.RECORDS.get(id);
}

/** Ids already derived from their names, per namespace: an id never changes, and a batch derives twenty. */
const ids = new WeakMap<object, Map<string, DurableObjectId>>();
const IDS_KEPT = 10_000;

function idNamed(namespace: Env['RECORDS'], name: string): DurableObjectId {
  let known = ids.get(namespace);
  if (known === undefined) ids.set(namespace, (known = new Map()));
  let id = known.get(name);
  if (id === undefined) {
    if (known.size >= IDS_KEPT) known.clear();
    known.set(name, (id = namespace.idFromName(name)));
  }
  return id;
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

/**
 * A write's way into the turns of the record whose object it runs in: that record's queue, with
 * no call. Other records are not asked for turns: a turn there would cost an object call apiece,
 * and their writes are guarded by the versions read (the ledger and D1 keep them right).
 */
export interface RecordTurns {
  /** Applies one patch of the record in its turn. */
  patch(call: PatchCall): Promise<PatchAnswer>;
  /** A batch's turn in the record's order. */
  turn(recordId: number, version: number): Promise<TurnAnswer>;
  /** Whether the write runs in this record's own object. */
  owns(recordId: number): boolean;
}

/** The record whose object a write runs in, and its queue. */
export interface OwnRecord {
  recordId: number;
  queue: RecordQueue;
}

/**
 * The turns of the record whose object this is (none in the Worker or a coordinator); their work
 * is counted in `meter`.
 */
export function recordTurns(meter: Meter, own?: OwnRecord): RecordTurns {
  const queueOf = (recordId: number): RecordQueue => {
    if (own === undefined || recordId !== own.recordId)
      throw new Error(`record ${recordId}'s turn must be taken in its own object`);
    return own.queue;
  };
  return {
    patch: (call) => meter.within(() => queueOf(call.recordId).patch(call)),
    turn: (recordId, version) => meter.within(() => queueOf(recordId).turn(version)),
    owns: (recordId) => own?.recordId === recordId,
  };
}
