import { DurableObject } from 'cloudflare:workers';
import { applySequence, newer, type Outcome, type QueuedPatch } from './domain/patch.ts';
import type { Env } from './env.ts';
import type { InputProblem } from './http/errors.ts';
import type { RecordOut } from './schemas/record.ts';
import { Meter, type Work } from './storage/meter.ts';
import { sleep } from './storage/retry.ts';
import { Store, VersionConflict } from './storage/store.ts';

/** How long a call may wait for its turn before it is answered 503 (CONTRACT §8). */
export const TURN_TIMEOUT_MS = 10_000;
/** Patches merged into one D1 write at most. */
const MAX_GROUP = 64;

export interface PatchCall extends QueuedPatch {
  recordId: number;
  /** The record as the Worker read it for this patch, if it read it; the object may know a newer state. */
  snapshot?: RecordOut;
}

/** Flat rather than a union: RPC stubs type unions of results poorly. */
export interface PatchAnswer {
  status: 200 | 409 | 412 | 422 | 503;
  record?: RecordOut;
  problem?: InputProblem;
  work: Work;
}

/** A batch's turn, once every patch queued before it is written. */
export interface TurnAnswer {
  /** False when the turn did not come within TURN_TIMEOUT_MS. */
  granted: boolean;
  /** The record as this object last wrote it, when that is newer than the batch's version. */
  newer?: RecordOut;
  work: Work;
}

type PatchEntry = { kind: 'patch'; call: PatchCall; deadline: number; timer: ReturnType<typeof setTimeout>; answer: (a: PatchAnswer) => void; fail: (e: unknown) => void };
type TurnEntry = { kind: 'turn'; version: number; timer: ReturnType<typeof setTimeout>; answer: (a: TurnAnswer) => void };
type Entry = PatchEntry | TurnEntry;

const NO_WORK: Work = { d1Trips: 0, d1Ms: 0 };

/**
 * One object per record: the record's patches, and the turns of batches that include it, are
 * served in one FIFO queue, one at a time. Awaiting D1 opens the input gate, so the queue, not
 * the runtime, is what serializes; D1's version guard is what makes any stale write (from a
 * twin object, a batch that committed meanwhile) fail instead of overwriting. No routing or
 * validation here.
 */
export class RecordObject extends DurableObject<Env> {
  /** The newest state of the record this object has seen committed. */
  private known: RecordOut | undefined;
  private readonly queue: Entry[] = [];
  private running = false;

  /** Applies one patch in turn (possibly grouped with others into one write). */
  patch(call: PatchCall): Promise<PatchAnswer> {
    return new Promise((answer, fail) => {
      this.enqueue({ kind: 'patch', call, answer, fail, deadline: Date.now() + TURN_TIMEOUT_MS, timer: this.expire(() => answer({ status: 503, work: NO_WORK })) });
    });
  }

  /**
   * A batch's turn in this record's order, answered once everything queued before it is written.
   * `version` is the one the batch read; only a newer state crosses back, so the common answer is tiny.
   */
  turn(version: number): Promise<TurnAnswer> {
    return new Promise((answer) => {
      this.enqueue({ kind: 'turn', version, answer, timer: this.expire(() => answer({ granted: false, work: NO_WORK })) });
    });
  }

  private enqueue(entry: Entry): void {
    this.queue.push(entry);
    void this.run();
  }

  /** Takes an entry that is still waiting out of the queue when its time is up. */
  private expire(onExpiry: () => void): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      const index = this.queue.findIndex((entry) => entry.timer === timer);
      if (index === -1) return;
      this.queue.splice(index, 1);
      onExpiry();
    }, TURN_TIMEOUT_MS);
    return timer;
  }

  private async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const head = this.queue.shift() as Entry;
        clearTimeout(head.timer);
        if (head.kind === 'turn') {
          const known = this.known;
          head.answer(known !== undefined && known.version > head.version ? { granted: true, newer: known, work: NO_WORK } : { granted: true, work: NO_WORK });
          continue;
        }
        const group: PatchEntry[] = [head];
        while (group.length < MAX_GROUP && this.queue[0]?.kind === 'patch') {
          const entry = this.queue.shift() as PatchEntry;
          clearTimeout(entry.timer);
          group.push(entry);
        }
        await this.applyGroup(group);
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Applies queued patches in order and writes the result once, guarded by the base version.
   * A write lost to another writer (a batch, a twin object) is recomputed on the stored state
   * until the oldest patch of the group has waited TURN_TIMEOUT_MS. A state this object only
   * remembers may predate a batch's write: a group that would write nothing on it (a no-op, a
   * failed If-Match), where some patch brought no fresh read, checks it against D1 first.
   */
  private async applyGroup(group: PatchEntry[]): Promise<void> {
    const meter = new Meter();
    const store = new Store(this.env.DB, meter);
    const deadline = Math.min(...group.map((entry) => entry.deadline));
    const id = (group[0] as PatchEntry).call.recordId;
    const load = async (): Promise<RecordOut> => {
      const stored = (await store.getRecords([id])).get(id);
      if (stored === undefined) throw new Error('record vanished');
      return stored;
    };
    let fresh = group.every((entry) => entry.call.snapshot !== undefined);
    let base = group.reduce((best, { call }) => (call.snapshot === undefined ? best : newer(best, call.snapshot)), this.known);
    try {
      for (let attempt = 1; ; attempt++) {
        if (base === undefined) [base, fresh] = [await load(), true];
        const { final, outcomes } = applySequence(base, group.map((entry) => entry.call), Date.now());
        const writes = final.version !== base.version;
        if (!writes && !fresh) {
          const stored = await load();
          fresh = true;
          if (stored.version !== base.version) {
            base = stored;
            continue;
          }
        }
        try {
          if (writes) await store.writeRecords([{ record: final, expectedVersion: base.version }]);
          this.known = final;
          group.forEach((entry, i) => entry.answer({ ...toAnswer(outcomes[i] as Outcome), work: meter.work() }));
          return;
        } catch (error) {
          if (!(error instanceof VersionConflict) || Date.now() >= deadline) throw error;
          // A writer that keeps winning (a twin, a stream of batches) is not raced in a tight loop.
          if (attempt > 1) await sleep(Math.random() * Math.min(100, 5 * 2 ** attempt));
          base = this.known = await load();
        }
      }
    } catch (error) {
      this.known = undefined;
      // Lost to other writers until the deadline: as busy as a queue that never gets its turn.
      if (error instanceof VersionConflict) for (const entry of group) entry.answer({ status: 503, work: meter.work() });
      else for (const entry of group) entry.fail(error);
    }
  }
}

function toAnswer(outcome: Outcome): Omit<PatchAnswer, 'work'> {
  if (outcome.ok) return { status: 200, record: outcome.record };
  return outcome.problem === undefined ? { status: outcome.status } : { status: outcome.status, problem: outcome.problem };
}
