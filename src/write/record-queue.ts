import { isUniqueViolation, uniqueViolation } from '../storage/record-index.ts';
import { invalidReference, isInvalidReference, isRecordReferenced } from '../storage/references.ts';
import { commitsAlone } from '../domain/references.ts';
import type { Clock } from '../core/clock.ts';
import { failureOf, type LedgerOutcome } from '../core/ledger.ts';
import type { InputProblem } from '../core/problem.ts';
import { applySequence, newer, type Outcome, type QueuedPatch } from '../domain/patch.ts';
import type { RecordOut } from '../schemas/record.ts';
import { recordKeyAnswer, type KeyClaim } from '../storage/idempotency.ts';
import { Meter, type Work } from '../storage/meter.ts';
import { AGAIN, isTransient, recomputing } from '../storage/retry.ts';
import { OutcomeUnknown, VersionConflict, type ChangeOf, type RecordWrites } from '../storage/writes.ts';
import { TURN_TIMEOUT_MS } from './deadlines.ts';

/** Patches merged into one D1 write at most. */
const MAX_GROUP = 64;

export interface PatchCall extends QueuedPatch {
  recordId: number;
  /** The write's id: unique per request, the key of its ledger row. */
  writeId: string;
  /** The record as the caller read it for this patch, if it did; the queue may know a newer state. */
  snapshot?: RecordOut;
  /** The request's Idempotency-Key claim: completed in the same D1 batch as the write. */
  claim?: KeyClaim;
}

/** Flat rather than a union: RPC stubs type unions of results poorly. */
export interface PatchAnswer {
  status: 200 | 409 | 412 | 422 | 503;
  record?: RecordOut;
  problem?: InputProblem;
  /** False: a refusal the ledger does not hold yet, which the write's runner closes before it is told. */
  closed?: boolean;
  work: Work;
}

/** A batch's turn, once every patch queued before it is written. */
export interface TurnAnswer {
  /** False when the turn did not come within TURN_TIMEOUT_MS. */
  granted: boolean;
  /** The record as this queue last wrote it, when that is newer than the batch's version. */
  newer?: RecordOut;
  work: Work;
}

type PatchEntry = { kind: 'patch'; call: PatchCall; deadline: number; answer: (a: PatchAnswer) => void };
type TurnEntry = { kind: 'turn'; version: number; deadline: number; answer: (a: TurnAnswer) => void };
type Entry = PatchEntry | TurnEntry;

/** A delete D1 refused because live records reference the record (the Worker says which). */
const referenced = {
  pointer: '',
  code: 'record_referenced',
  message: 'live records reference this record',
};

const NO_WORK: Work = { d1Trips: 0, d1Ms: 0 };
const OUTCOME_UNKNOWN: InputProblem = {
  pointer: '',
  code: 'outcome_unknown',
  message: 'storage did not confirm the write in time',
};

/**
 * The write protocol of one record, as plain code: its patches (and the turns of batches that
 * include it) wait in one FIFO queue and are applied one group at a time. Time, chance and
 * storage are injected, so the simulator runs this very class.
 *
 * One rule decides everything that can go wrong: a group's D1 batch starts with a ledger row
 * for each of its calls, the committed outcome or the failure it will answer. If any call's id
 * is already in the ledger (an earlier life of this object, a twin, or this group's own lost
 * attempt finished it), the batch changes nothing; the queue reads the ledger, answers those
 * calls what it says, and recomputes only the others on the stored state. A call is therefore
 * never applied twice, and never answered as failed (412, 409, 422, 503) when it committed.
 */
export class RecordQueue {
  /** The newest state of the record this queue has seen committed. */
  private known: RecordOut | undefined;
  /** Oldest first; deadlines never decrease along it. */
  private readonly queue: Entry[] = [];
  private running = false;
  /** Whether a timer waits for the oldest entry's deadline. */
  private sweeping = false;

  constructor(
    private readonly recordId: number,
    private readonly clock: Clock,
    /** Storage for one group, with the group's own meter. */
    private readonly storage: (meter: Meter) => RecordWrites,
  ) {}

  /** Applies one patch in turn, possibly grouped with others into one write. */
  patch(call: PatchCall): Promise<PatchAnswer> {
    return new Promise((answer) => {
      this.enqueue({ kind: 'patch', call, answer, deadline: this.clock.now() + TURN_TIMEOUT_MS });
    });
  }

  /**
   * A batch's turn in this record's order, answered once everything queued before it is written.
   * `version` is the one the batch read; only a newer state crosses back, so the common answer is tiny.
   */
  turn(version: number): Promise<TurnAnswer> {
    // Nothing is queued or being written: the turn is now, with no wait and no timer.
    if (!this.running && this.queue.length === 0) return Promise.resolve(this.grant(version));
    return new Promise((answer) => {
      this.enqueue({ kind: 'turn', version, answer, deadline: this.clock.now() + TURN_TIMEOUT_MS });
    });
  }

  /** A batch's turn, given: the newer state this queue knows, then forgotten (the batch will likely write it). */
  private grant(version: number): TurnAnswer {
    const known = this.known;
    this.known = undefined;
    return known !== undefined && known.version > version
      ? { granted: true, newer: known, work: NO_WORK }
      : { granted: true, work: NO_WORK };
  }

  private enqueue(entry: Entry): void {
    this.queue.push(entry);
    this.sweepLater();
    void this.run();
  }

  /**
   * One timer for the whole queue, not one per entry: at the oldest entry's deadline, every entry
   * still waiting whose time is up leaves the queue (a patch is answered as late, a turn is not
   * granted), and the timer waits for the next oldest.
   */
  private sweepLater(): void {
    const oldest = this.queue[0];
    if (this.sweeping || oldest === undefined) return;
    this.sweeping = true;
    void this.clock.sleep(Math.max(0, oldest.deadline - this.clock.now())).then(() => {
      this.sweeping = false;
      const now = this.clock.now();
      while (this.queue[0] !== undefined && this.queue[0].deadline <= now) {
        const expired = this.queue.shift() as Entry;
        if (expired.kind === 'patch') this.late(expired, new Meter());
        else expired.answer({ granted: false, work: NO_WORK });
      }
      this.sweepLater();
    });
  }

  private async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const head = this.queue.shift() as Entry;
        if (head.kind === 'turn') {
          head.answer(this.grant(head.version));
          continue;
        }
        const group: PatchEntry[] = [head];
        // A delete, a restore or a change of references commits alone: D1 checks each such state.
        while (
          !commitsAlone(head.call) &&
          group.length < MAX_GROUP &&
          this.queue[0]?.kind === 'patch' &&
          !commitsAlone(this.queue[0].call)
        )
          group.push(this.queue.shift() as PatchEntry);
        await this.applyGroup(group);
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Applies queued patches in order and commits the result once, guarded by the base version,
   * with every call's ledger row. Lost to another writer: recompute on the stored state. Some
   * calls already finished: answer them from the ledger, recompute the rest. Each patch keeps
   * its own deadline. A group that storage refuses is split, so one bad patch never fails the
   * others.
   */
  private async applyGroup(group: PatchEntry[]): Promise<void> {
    const meter = new Meter();
    const writes = this.storage(meter);
    let entries = group;
    let base = entries.reduce(
      (best, { call }) => (call.snapshot === undefined ? best : newer(best, call.snapshot)),
      this.known,
    );
    try {
      await recomputing(
        async () => {
          entries = this.withoutLate(entries, meter);
          if (entries.length === 0) return undefined;
          const now = this.clock.now();
          const deadline = Math.max(...entries.map((entry) => entry.deadline));
          base ??= await this.load(writes, deadline);
          const { final, outcomes } = applySequence(
            base,
            entries.map((entry) => entry.call),
            now,
          );
          const finished = await this.commit(writes, base, final, entries, outcomes, now, deadline).catch(
            (error: unknown) => {
              if (error instanceof VersionConflict) return 'conflict' as const;
              throw error;
            },
          );
          if (finished === 'conflict' || finished.size > 0) {
            if (finished !== 'conflict')
              entries = await this.answerFinished(entries, finished, writes, meter, deadline);
            this.known = undefined;
            base = undefined;
            return AGAIN;
          }
          this.known = final;
          entries.forEach((entry, i) => entry.answer({ ...toAnswer(outcomes[i] as Outcome), work: meter.work() }));
          return undefined;
        },
        { clock: this.clock },
      );
    } catch (error) {
      this.known = undefined;
      if (error instanceof OutcomeUnknown || isTransient(error)) {
        // The write may have committed: say so; a retry with the same Idempotency-Key tells.
        for (const entry of entries) entry.answer({ status: 503, problem: OUTCOME_UNKNOWN, work: meter.work() });
      } else if (entries.length > 1) {
        for (const entry of entries) await this.applyGroup([entry]);
      } else {
        this.refuse(entries[0] as PatchEntry, refusalOf(error, this.recordId), meter);
      }
    }
  }

  /** Answers the entries whose time is up; returns the others. */
  private withoutLate(entries: PatchEntry[], meter: Meter): PatchEntry[] {
    const now = this.clock.now();
    for (const entry of entries) if (entry.deadline <= now) this.late(entry, meter);
    return entries.filter((entry) => entry.deadline > now);
  }

  private async load(writes: RecordWrites, deadline: number): Promise<RecordOut> {
    const stored = (await writes.current([this.recordId], deadline)).get(this.recordId);
    if (stored === undefined) throw new Error('record vanished');
    return stored;
  }

  /**
   * The group's D1 batch: every call's ledger row (its outcome: the version it answers, or its
   * failure), the record's new state guarded by `base` (or only the guard, when nothing
   * changed), a change row per call that changed something, then claimed keys. Returns the
   * calls already finished, by id (empty when this attempt committed).
   */
  private async commit(
    writes: RecordWrites,
    base: RecordOut,
    final: RecordOut,
    entries: readonly PatchEntry[],
    outcomes: readonly Outcome[],
    now: number,
    deadline: number,
  ): Promise<Map<string, LedgerOutcome>> {
    const ledger = entries.map(({ call }, i) => {
      const outcome = outcomes[i] as Outcome;
      return {
        id: call.writeId,
        outcome: outcome.ok
          ? { r: [[this.recordId, outcome.record.version]] }
          : failed(outcome.status, outcome.problem),
      } as { id: string; outcome: LedgerOutcome };
    });
    const changes: ChangeOf[] = [];
    const keys: D1PreparedStatement[] = [];
    let prev = base;
    entries.forEach(({ call }, i) => {
      const outcome = outcomes[i] as Outcome;
      if (!outcome.ok) return;
      if (outcome.change !== undefined && outcome.change !== 'created')
        changes.push({ type: outcome.change, prev, next: outcome.record });
      prev = outcome.record;
      if (call.claim !== undefined)
        keys.push(writes.keyDone(call.claim, call.writeId, recordKeyAnswer(outcome.record.version), now));
    });
    const state = final.version === base.version ? writes.guard(base.id, base.version) : writes.update(final, base);
    const statements = [
      writes.ledger(ledger),
      state,
      ...(changes.length === 0 ? [] : writes.batchWrites([], changes)),
      ...keys,
    ];
    const result = await writes.commit(
      statements,
      ledger.map(({ id }) => id),
      deadline,
    );
    return 'finished' in result ? result.finished : new Map();
  }

  /** Answers the calls the ledger says are finished; returns the others. */
  private async answerFinished(
    entries: PatchEntry[],
    finished: Map<string, LedgerOutcome>,
    writes: RecordWrites,
    meter: Meter,
    deadline: number,
  ): Promise<PatchEntry[]> {
    await Promise.all(
      entries
        .filter((entry) => finished.has(entry.call.writeId))
        .map(async (entry) =>
          entry.answer(await this.answerOf(finished.get(entry.call.writeId) as LedgerOutcome, writes, meter, deadline)),
        ),
    );
    return entries.filter((entry) => !finished.has(entry.call.writeId));
  }

  /**
   * A refusal storage made, or a call whose time was up: answered unclosed. The ledger must hold
   * it before it is told (the call may have committed before: its reply lost, a twin ran it), and
   * the write's runner closes it.
   */
  private refuse(entry: PatchEntry, refusal: { status: 409 | 422; problem: InputProblem }, meter: Meter): void {
    entry.answer({ ...refusal, closed: false, work: meter.work() });
  }

  private late(entry: PatchEntry, meter: Meter): void {
    entry.answer({ status: 503, closed: false, work: meter.work() });
  }

  private async answerOf(
    outcome: LedgerOutcome,
    writes: RecordWrites,
    meter: Meter,
    deadline: number,
  ): Promise<PatchAnswer> {
    const failure = failureOf(outcome);
    if (failure !== undefined) return { ...(failure as Omit<PatchAnswer, 'work'>), work: meter.work() };
    try {
      const [record] = (await writes.answered(outcome, deadline)) ?? [];
      return record === undefined
        ? { status: 503, problem: OUTCOME_UNKNOWN, work: meter.work() }
        : { status: 200, record, work: meter.work() };
    } catch {
      return { status: 503, problem: OUTCOME_UNKNOWN, work: meter.work() };
    }
  }
}

/**
 * What storage's refusal of one patch is answered: a reference it may not make, a delete that
 * live records hold back, a unique value held by another record. These are answers, not
 * failures of the service, and are not logged; a refusal of another kind is logged once.
 */
function refusalOf(error: unknown, recordId: number): { status: 409 | 422; problem: InputProblem } {
  if (isInvalidReference(error)) return { status: 422, problem: invalidReference('/fieldValues') };
  if (isRecordReferenced(error)) return { status: 409, problem: referenced };
  if (isUniqueViolation(error))
    return {
      status: 409,
      problem: { pointer: '/fieldValues', code: 'unique_violation', message: uniqueViolation('').message },
    };
  console.log(JSON.stringify({ message: 'storage refused a patch', recordId, error: String(error) }));
  return {
    status: 422,
    problem: { pointer: '', code: 'storage_refused', message: 'storage refused this change; nothing was written' },
  };
}

function failed(status: number, problem: InputProblem | undefined): LedgerOutcome {
  return problem === undefined ? { f: status } : { f: status, p: problem };
}

function toAnswer(outcome: Outcome): Omit<PatchAnswer, 'work'> {
  if (outcome.ok) return { status: 200, record: outcome.record };
  return outcome.problem === undefined
    ? { status: outcome.status }
    : { status: outcome.status, problem: outcome.problem };
}
