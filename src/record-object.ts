import { DurableObject } from 'cloudflare:workers';
import { systemClock } from './core/clock.ts';
import type { Env } from './env.ts';
import { runNear } from './patching/near.ts';
import type { NearAnswer, NearCall, RecordRpc } from './record-rpc.ts';
import { onPrimary } from './storage/sessions.ts';
import { RecordWrites } from './storage/writes.ts';
import { CallMemory, jsonBytes } from './writing/call-memory.ts';
import { RecordQueue, type PatchAnswer, type PatchCall, type TurnAnswer } from './writing/record-queue.ts';

/** How long an object remembers a call, so a Worker that sends it again joins the first run. */
const CALL_MEMORY_MS = 60_000;
/** At most this many calls and bytes of answers remembered, for patches and handed-over operations each. */
const CALL_MEMORY_ENTRIES = 10_000;
export const CALL_MEMORY_BYTES = 8 * 1024 * 1024;

/**
 * One object per record, a thin adapter: its record's write protocol (writing/record-queue.ts)
 * with the object's D1 binding and the system clock, and, as a coordinator near D1, whole
 * operations handed over by the Worker (patching/near.ts). The same class serves both because
 * a batch is coordinated in its first record's object, which is warm whenever that record is
 * in use: one binding, one class, no extra cold start, and that record's own patch or turn goes
 * straight to its queue. Memory here only saves work (a call
 * sent again joins its first run); correctness never depends on it, since every write settles
 * by its ledger row. No routing or validation here.
 */
export class RecordObject extends DurableObject<Env> implements RecordRpc {
  private queue: RecordQueue | undefined;
  private recordId: number | undefined;
  private readonly calls = new CallMemory<PatchAnswer>(
    CALL_MEMORY_MS,
    CALL_MEMORY_ENTRIES,
    CALL_MEMORY_BYTES,
    jsonBytes,
    () => Date.now(),
  );
  private readonly nearCalls = new CallMemory<NearAnswer>(
    CALL_MEMORY_MS,
    CALL_MEMORY_ENTRIES,
    CALL_MEMORY_BYTES,
    jsonBytes,
    () => Date.now(),
  );

  /** Runs an operation handed over by the Worker, once per call id while remembered. Never rejects. */
  near(call: NearCall): Promise<NearAnswer> {
    const seen = this.nearCalls.get(call.callId);
    if (seen !== undefined) return seen;
    // Called by its record's id, this object is that record's: its own patches and turns skip the stub.
    const home =
      call.home === undefined
        ? undefined
        : {
            recordId: call.home,
            patch: (c: PatchCall) => this.patch(c),
            turn: (id: number, v: number) => this.turn(id, v),
          };
    const answer = runNear(this.env, (promise) => this.ctx.waitUntil(promise), call, home);
    this.nearCalls.set(call.callId, answer);
    return answer;
  }

  /** Applies one patch of this record in turn. */
  patch(call: PatchCall): Promise<PatchAnswer> {
    const seen = this.calls.get(call.callId);
    if (seen !== undefined) return seen;
    const answer = this.queueOf(call.recordId).patch(call);
    this.calls.set(call.callId, answer);
    return answer;
  }

  /** A batch's turn in this record's order. */
  turn(recordId: number, version: number): Promise<TurnAnswer> {
    return this.queueOf(recordId).turn(version);
  }

  private queueOf(recordId: number): RecordQueue {
    // One object, one record: a call for another record (a misrouted one) must never use this queue.
    if (this.recordId !== undefined && this.recordId !== recordId)
      throw new Error(`record ${recordId}'s call reached record ${this.recordId}'s object`);
    this.recordId = recordId;
    this.queue ??= new RecordQueue(
      recordId,
      systemClock,
      (meter) => new RecordWrites(onPrimary(this.env.DB, meter), meter),
    );
    return this.queue;
  }
}
