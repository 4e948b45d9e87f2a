import { DurableObject } from 'cloudflare:workers';
import { systemClock } from './core/clock.ts';
import { createContext } from './context.ts';
import type { Env } from './env.ts';
import type { RecordRpc } from './record-rpc.ts';
import { databaseNamed } from './tenancy/routes.ts';
import { onPrimary } from './storage/sessions.ts';
import { RecordWrites } from './storage/writes.ts';
import { CallMemory } from './write/call-memory.ts';
import { runWrite } from './write/engine.ts';
import { RecordQueue, type TurnAnswer } from './write/record-queue.ts';
import { firstRecordOf, type WriteAnswer, type WriteCall } from './write/write.ts';

/** How long an object remembers a write's answer, so a Worker that sends it again joins the first run. */
const CALL_MEMORY_MS = 60_000;
/** At most this many writes and bytes of answers remembered. */
const CALL_MEMORY_ENTRIES = 10_000;
export const CALL_MEMORY_BYTES = 8 * 1024 * 1024;

/**
 * One object per record, a thin adapter: the write engine runs here, near D1, for every write that
 * names this record first, and the record's queue gives each of its writes its turn. Coordinators
 * (objects named `writes:<n>`) are the same class without a record of their own. Memory here only
 * saves work (a write sent again joins its first run); correctness never depends on it, since
 * every write ends in its ledger row. No routing or validation here.
 */
export class RecordObject extends DurableObject<Env> implements RecordRpc {
  private queue: RecordQueue | undefined;
  private recordId: number | undefined;
  /** The database of this record's tenant, as the last write told it. */
  private database = 'DB';
  private readonly answers = new CallMemory<WriteAnswer>(
    CALL_MEMORY_MS,
    CALL_MEMORY_ENTRIES,
    CALL_MEMORY_BYTES,
    (answer) => answer.body.byteLength + 256,
    () => Date.now(),
  );

  /**
   * Runs a write in this object, once per write id while remembered. Never rejects: a refusal is
   * an answer. A write sent again may have committed in another run (a twin, a life of this
   * object that restarted): a refusal remembered from an earlier run is not its answer until the
   * ledger holds it, so it runs again, as a write sent again, which closes it there.
   */
  run(call: WriteCall): Promise<WriteAnswer> {
    const seen = this.answers.get(call.id);
    if (seen === undefined) return this.runOnce(call);
    if (call.again !== true) return seen;
    return seen.then((answer) => (answer.status < 400 || answer.closed === true ? answer : this.runOnce(call)));
  }

  private runOnce(call: WriteCall): Promise<WriteAnswer> {
    this.database = call.tenant.database;
    const first = firstRecordOf(call.write);
    const own = first === undefined ? undefined : { recordId: first, queue: this.queueOf(first) };
    const waitUntil = (p: Promise<unknown>) => this.ctx.waitUntil(p);
    const context = createContext(this.env, call.requestId, { waitUntil }, undefined, own, call.tenant);
    const answer = runWrite(context, call);
    this.answers.set(call.id, answer);
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
      (meter) => new RecordWrites(onPrimary(databaseNamed(this.env, this.database) ?? this.env.DB, meter), meter),
    );
    return this.queue;
  }
}
