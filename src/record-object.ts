import { DurableObject } from 'cloudflare:workers';
import { applySequence, newer, type Outcome, type QueuedPatch } from './domain/patch.ts';
import type { Env } from './env.ts';
import type { InputProblem } from './http/errors.ts';
import type { RecordOut } from './schemas/record.ts';
import { Meter, type Work } from './storage/meter.ts';
import { Store, VersionConflict } from './storage/store.ts';

/** How long a call may wait for its turn before it is answered 503 (CONTRACT §8). */
export const TURN_TIMEOUT_MS = 10_000;
/** A batch's lease ends by itself after this, so a crashed Worker never leaves an object stuck. */
export const LEASE_TTL_MS = 5_000;
/** Patches merged into one D1 write at most. */
const MAX_GROUP = 64;
/** Writes lost to a concurrent writer (a twin object, an expired lease) before giving up. */
const MAX_CONFLICTS = 4;

export interface PatchCall extends QueuedPatch {
  /** The record as the Worker read it; the object may know a newer state. */
  snapshot: RecordOut;
}
/** Flat rather than a union: RPC stubs type unions of results poorly. */
export interface PatchAnswer {
  status: 200 | 409 | 412 | 422 | 503;
  record?: RecordOut;
  problem?: InputProblem;
  work: Work;
}

export interface LeaseCall {
  leaseId: string;
  snapshot: RecordOut;
  /** 0: answer at once (granted or busy); otherwise wait up to this long for the turn. */
  waitMs: number;
}
export interface LeaseAnswer {
  /** The best known state of the record when granted. */
  record?: RecordOut;
  work: Work;
}

type Entry =
  | { kind: 'patch'; call: PatchCall; timer: ReturnType<typeof setTimeout>; answer: (a: PatchAnswer) => void; fail: (e: unknown) => void }
  | { kind: 'lease'; call: LeaseCall; timer: ReturnType<typeof setTimeout>; answer: (a: LeaseAnswer) => void };

const NO_WORK: Work = { d1Trips: 0, d1Ms: 0 };

/**
 * One object per record: the record's patches and the leases of batches take turns in one
 * FIFO queue, one at a time. Awaiting D1 opens the input gate, so the queue, not the runtime,
 * is what serializes; D1's version guard is what makes a stale write (from a twin object, an
 * expired lease) fail instead of overwriting. No routing or validation here.
 */
export class RecordObject extends DurableObject<Env> {
  /** The newest state of the record this object has seen committed. */
  private known: RecordOut | undefined;
  private readonly queue: Entry[] = [];
  private running = false;
  private held: { leaseId: string; end: (committed?: RecordOut) => void } | undefined;

  /** Applies one patch in turn (possibly grouped with others into one write). */
  patch(call: PatchCall): Promise<PatchAnswer> {
    return new Promise((answer, fail) => {
      const entry: Entry = { kind: 'patch', call, answer, fail, timer: this.expireAfter(TURN_TIMEOUT_MS, () => answer({ status: 503, work: NO_WORK })) };
      this.enqueue(entry);
    });
  }

  /** Holds the record's turn for a batch until `release` or LEASE_TTL_MS. */
  lease(call: LeaseCall): Promise<LeaseAnswer> {
    if (this.held?.leaseId === call.leaseId) return Promise.resolve({ record: newer(this.known, call.snapshot), work: NO_WORK });
    if (call.waitMs === 0 && (this.running || this.queue.length > 0)) return Promise.resolve({ work: NO_WORK });
    return new Promise((answer) => {
      const entry: Entry = { kind: 'lease', call, answer, timer: this.expireAfter(Math.max(call.waitMs, 1), () => answer({ work: NO_WORK })) };
      this.enqueue(entry);
    });
  }

  /** Ends a lease; `committed` is the record's state if the batch wrote it. */
  release(leaseId: string, committed?: RecordOut): { work: Work } {
    if (this.held?.leaseId === leaseId) this.held.end(committed);
    return { work: NO_WORK };
  }

  private enqueue(entry: Entry): void {
    this.queue.push(entry);
    void this.run();
  }

  /** Removes a still-waiting entry from the queue when its time is up. */
  private expireAfter(ms: number, onExpiry: () => void): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      const index = this.queue.findIndex((entry) => entry.timer === timer);
      if (index === -1) return;
      this.queue.splice(index, 1);
      onExpiry();
    }, ms);
    return timer;
  }

  private async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const head = this.queue[0];
        if (head?.kind === 'lease') {
          this.queue.shift();
          clearTimeout(head.timer);
          await this.hold(head);
          continue;
        }
        const group: Extract<Entry, { kind: 'patch' }>[] = [];
        while (group.length < MAX_GROUP && this.queue[0]?.kind === 'patch') {
          const entry = this.queue.shift() as Extract<Entry, { kind: 'patch' }>;
          clearTimeout(entry.timer);
          group.push(entry);
        }
        await this.applyGroup(group);
      }
    } finally {
      this.running = false;
    }
  }

  private hold(entry: Extract<Entry, { kind: 'lease' }>): Promise<void> {
    return new Promise((done) => {
      const end = (committed?: RecordOut): void => {
        clearTimeout(ttl);
        this.held = undefined;
        if (committed !== undefined) this.known = newer(this.known, committed);
        done();
      };
      // Expired: the holder may still write, so what this object knows may be stale now.
      const ttl = setTimeout(() => {
        this.known = undefined;
        end();
      }, LEASE_TTL_MS);
      this.held = { leaseId: entry.call.leaseId, end };
      entry.answer({ record: newer(this.known, entry.call.snapshot), work: NO_WORK });
    });
  }

  /** Applies queued patches in order and writes the result once, guarded by the base version. */
  private async applyGroup(group: Extract<Entry, { kind: 'patch' }>[]): Promise<void> {
    const meter = new Meter();
    const store = new Store(this.env.DB, meter);
    let base = group.reduce<RecordOut | undefined>((best, entry) => newer(best, entry.call.snapshot), this.known);
    try {
      for (let conflicts = 0; base !== undefined; conflicts++) {
        const { final, outcomes } = applySequence(base, group.map((entry) => entry.call), Date.now());
        try {
          if (final.version !== base.version) await store.writeRecords([{ record: final, expectedVersion: base.version }]);
          this.known = final;
          group.forEach((entry, i) => entry.answer({ ...toAnswer(outcomes[i] as Outcome), work: meter.work() }));
          return;
        } catch (error) {
          if (!(error instanceof VersionConflict) || conflicts + 1 >= MAX_CONFLICTS) throw error;
          base = (await store.getRecords([base.id])).get(base.id);
          this.known = base;
        }
      }
      throw new Error('record vanished');
    } catch (error) {
      this.known = undefined;
      // Lost to other writers again and again: as busy as a queue that never gets its turn.
      if (error instanceof VersionConflict) for (const entry of group) entry.answer({ status: 503, work: meter.work() });
      else for (const entry of group) entry.fail(error);
    }
  }
}

function toAnswer(outcome: Outcome): Omit<PatchAnswer, 'work'> {
  if (outcome.ok) return { status: 200, record: outcome.record };
  return outcome.problem === undefined ? { status: outcome.status } : { status: outcome.status, problem: outcome.problem };
}
