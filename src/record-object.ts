import { DurableObject } from 'cloudflare:workers';
import type { InputProblem } from './core/problem.ts';
import { applySequence, newer, type Outcome, type QueuedPatch } from './domain/patch.ts';
import type { Env } from './env.ts';
import { runNear, type NearAnswer, type NearCall } from './patching/near.ts';
import type { RecordOut } from './schemas/record.ts';
import { recordAnswer, type KeyClaim } from './storage/idempotency.ts';
import { Expiring } from './storage/isolate-cache.ts';
import { Meter, type Work } from './storage/meter.ts';
import { isTransient, sleep } from './storage/retry.ts';
import { Store } from './storage/store.ts';
import { AlreadyCommitted, OutcomeUnknown, RecordWrites, VersionConflict } from './storage/writes.ts';
import { TURN_TIMEOUT_MS } from './turns.ts';

/** Patches merged into one D1 write at most. */
const MAX_GROUP = 64;
/** How long an object remembers the answer of a call, for a Worker that sends it again. */
const CALL_MEMORY_MS = 5 * 60_000;

export interface PatchCall extends QueuedPatch {
  recordId: number;
  /** Unique per request: the object answers a call it has seen again with the same answer. */
  callId: string;
  /** Set when the Worker sends the call again because it lost the answer. */
  resent?: boolean;
  /** The record as the Worker read it for this patch, if it read it; the object may know a newer state. */
  snapshot?: RecordOut;
  /** The request's Idempotency-Key claim: the answer is stored with the write. */
  claim?: KeyClaim;
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

type PatchEntry = { kind: 'patch'; call: PatchCall; deadline: number; timer: ReturnType<typeof setTimeout>; answer: (a: PatchAnswer) => void };
type TurnEntry = { kind: 'turn'; version: number; timer: ReturnType<typeof setTimeout>; answer: (a: TurnAnswer) => void };
type Entry = PatchEntry | TurnEntry;

const NO_WORK: Work = { d1Trips: 0, d1Ms: 0 };

/**
 * One object per record: the record's patches, and the turns of batches that include it, are
 * served in one FIFO queue, one at a time. Awaiting D1 opens the input gate, so the queue, not
 * the runtime, is what serializes; D1's version guard is what makes any stale write (from a
 * twin object, a batch that committed meanwhile) fail instead of overwriting. Each call carries
 * an id: a call sent again (its answer was lost on the way back) gets the first answer, never a
 * second application. No routing or validation here.
 */
export class RecordObject extends DurableObject<Env> {
  /** The newest state of the record this object has seen committed. */
  private known: RecordOut | undefined;
  private readonly queue: Entry[] = [];
  private running = false;
  private readonly calls = new Expiring<string, Promise<PatchAnswer>>(CALL_MEMORY_MS, 10_000, () => Date.now());
  private readonly nearCalls = new Expiring<string, Promise<NearAnswer>>(CALL_MEMORY_MS, 10_000, () => Date.now());

  /**
   * As a coordinator near D1 (patching/near.ts): runs a batch, a keyed write or a patch the
   * Worker could not decide from memory, once per call id. Its answer never rejects, so it is always remembered.
   */
  near(call: NearCall): Promise<NearAnswer> {
    const seen = this.nearCalls.get(call.callId);
    if (seen !== undefined) return seen;
    const answer = runNear(this.env, (promise) => this.ctx.waitUntil(promise), call);
    this.nearCalls.set(call.callId, answer);
    return answer;
  }

  /** Applies one patch in turn (possibly grouped with others into one write), once per call id. */
  patch(call: PatchCall): Promise<PatchAnswer> {
    const seen = this.calls.get(call.callId);
    if (seen !== undefined) return seen;
    const answer = this.admit(call);
    this.calls.set(call.callId, answer);
    // A call that could not even be admitted (its D1 check failed) is forgotten, so a resend tries again.
    answer.catch(() => this.calls.delete(call.callId));
    return answer;
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

  private async admit(call: PatchCall): Promise<PatchAnswer> {
    if (call.resent === true) {
      // Sent again, and this object does not remember it: it may have restarted after writing it.
      const meter = new Meter();
      const committed = await new RecordWrites(this.env.DB, meter).committedCall(call.callId);
      if (committed !== undefined) return { status: 200, record: committed, work: meter.work() };
    }
    return new Promise((answer) => {
      this.enqueue({ kind: 'patch', call, answer, deadline: Date.now() + TURN_TIMEOUT_MS, timer: this.expire(() => answer({ status: 503, work: NO_WORK })) });
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
          // The batch will most likely write this record: a state remembered now would be stale,
          // and the next patch would write on it, be refused and redo it. Reading afresh is cheaper.
          this.known = undefined;
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
   * A write lost to another writer (a batch, a twin object) is recomputed on the stored state;
   * each patch keeps its own deadline and is answered 503 when it passes. A state this object
   * only remembers may predate a batch's write: a group that would write nothing on it (a no-op,
   * a failed If-Match), where some patch brought no fresh read, checks it against D1 first.
   * A group that storage refuses is split, so one bad patch never fails the others.
   */
  private async applyGroup(group: PatchEntry[]): Promise<void> {
    const meter = new Meter();
    const store = new Store(this.env.DB, meter);
    const writes = new RecordWrites(this.env.DB, meter);
    const id = (group[0] as PatchEntry).call.recordId;
    const load = async (): Promise<RecordOut> => {
      const stored = (await store.getRecords([id])).get(id);
      if (stored === undefined) throw new Error('record vanished');
      return stored;
    };
    let entries = group;
    let fresh = entries.every((entry) => entry.call.snapshot !== undefined);
    let base = entries.reduce((best, { call }) => (call.snapshot === undefined ? best : newer(best, call.snapshot)), this.known);
    try {
      for (let attempt = 1; ; attempt++) {
        const now = Date.now();
        for (const late of entries.filter((entry) => entry.deadline <= now)) late.answer({ status: 503, work: meter.work() });
        entries = entries.filter((entry) => entry.deadline > now);
        if (entries.length === 0) return;
        if (base === undefined) [base, fresh] = [await load(), true];
        const { final, outcomes } = applySequence(base, entries.map((entry) => entry.call), now);
        if (final.version === base.version && !fresh) {
          const stored = await load();
          fresh = true;
          if (stored.version !== base.version) {
            base = stored;
            continue;
          }
        }
        try {
          const statements = this.statements(writes, base, final, entries, outcomes, now);
          if (statements.length > 0) await writes.commit(statements, Math.max(...entries.map((entry) => entry.deadline)));
          this.known = final;
          entries.forEach((entry, i) => entry.answer({ ...toAnswer(outcomes[i] as Outcome), work: meter.work() }));
          return;
        } catch (error) {
          if (!(error instanceof VersionConflict)) throw error;
          // A writer that keeps winning (a twin, a stream of batches) is not raced in a tight loop.
          if (attempt > 1) await sleep(Math.random() * Math.min(100, 5 * 2 ** attempt));
          [base, fresh] = [(this.known = await load()), true];
        }
      }
    } catch (error) {
      this.known = undefined;
      if (error instanceof OutcomeUnknown || isTransient(error)) {
        // The write may have committed: say so, and a retry with the same Idempotency-Key tells.
        const problem = { pointer: '', code: 'outcome_unknown', message: 'storage did not confirm the write in time' };
        for (const entry of entries) entry.answer({ status: 503, problem, work: meter.work() });
      } else if (entries.length > 1) {
        for (const entry of entries) await this.applyGroup([entry]);
      } else {
        await this.refuseAlone(entries[0] as PatchEntry, error, writes, meter);
      }
    }
  }

  /**
   * One patch that storage refused on its own. AlreadyCommitted means a previous life of this
   * object wrote it: its committed state is its answer. Anything else passed every check we know
   * of, so it is logged as our gap, and answered 422 with nothing written.
   */
  private async refuseAlone(entry: PatchEntry, error: unknown, writes: RecordWrites, meter: Meter): Promise<void> {
    if (error instanceof AlreadyCommitted) {
      const record = await writes.committedCall(entry.call.callId).catch(() => undefined);
      entry.answer(record === undefined ? { status: 503, work: meter.work() } : { status: 200, record, work: meter.work() });
      return;
    }
    console.error(JSON.stringify({ recordId: entry.call.recordId, callId: entry.call.callId, refused: error instanceof Error ? error.message : String(error) }));
    entry.answer({ status: 422, problem: { pointer: '', code: 'storage_refused', message: 'storage refused this change; nothing was written' }, work: meter.work() });
  }

  /**
   * The D1 batch of a group: a change row for every patch that changed something (under its
   * call id), the record's new state guarded by `base` (or only the guard, when nothing changed
   * but answers are stored), then the answers of claimed Idempotency-Keys. Empty when there is
   * nothing to store.
   */
  private statements(writes: RecordWrites, base: RecordOut, final: RecordOut, entries: readonly PatchEntry[], outcomes: readonly Outcome[], now: number): D1PreparedStatement[] {
    const changes: D1PreparedStatement[] = [];
    const answers: D1PreparedStatement[] = [];
    entries.forEach(({ call }, i) => {
      const outcome = outcomes[i] as Outcome;
      if (!outcome.ok) return;
      if (outcome.change !== undefined) changes.push(writes.change(outcome.change, outcome.record, call.callId));
      if (call.claim !== undefined) answers.push(writes.answer(call.claim, recordAnswer(outcome.record), now));
    });
    if (changes.length === 0 && answers.length === 0) return [];
    const record = final.version === base.version ? writes.guard(base.id, base.version) : writes.update(final, base.version);
    return [...changes, record, ...answers];
  }
}

function toAnswer(outcome: Outcome): Omit<PatchAnswer, 'work'> {
  if (outcome.ok) return { status: 200, record: outcome.record };
  return outcome.problem === undefined ? { status: outcome.status } : { status: outcome.status, problem: outcome.problem };
}
