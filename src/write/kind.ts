import type { LedgerOutcome } from '../core/ledger.ts';
import type { RecordOut } from '../schemas/record.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import type { Work } from '../storage/meter.ts';
import type { AGAIN } from '../storage/retry.ts';
import type { KeyAnswer } from '../storage/writes.ts';
import type { PatchAnswer } from './record-queue.ts';
import type { Claims } from './refusals.ts';
import type { WriteAnswer } from './write.ts';

/**
 * A kind of record write (create, patch, batch, upsert), as the engine runs it: a small value
 * made from what was read for the write, holding its own decision and statements. The engine
 * does everything else, the same way for every kind: claims the key, runs the attempts, commits,
 * recomputes after a lost race, explains D1's refusals, finishes the ledger row and answers.
 */
export interface WriteRun<Plan, Done> extends Attempts<Plan, Done> {
  /** Who writes: their Idempotency-Key is claimed for them. */
  userId: number;
  /** What the key's fingerprint is taken of: the same body, the same key. */
  body: unknown;
  /** What the write claimed, to explain a refusal of D1's at the right pointers. */
  claims(plan: Plan): Claims;
  /** The answer of what the write did. */
  answer(done: Done, work: Work): WriteAnswer;
  /** Called once the write is over, however it ended (answered, refused, failed or replayed). */
  settled?(): void;
}

/** A write's attempts: each decides on what is known then, and commits its plan. */
export interface Attempts<Plan, Done> {
  /**
   * One attempt's decision on what is known now (pure but for the reads a kind needs, such as
   * an upsert's matches): its plan, or AGAIN to decide again. A refusal is thrown.
   */
  decide(): Promise<Plan | typeof AGAIN>;
  /** How a plan commits: one D1 batch of the engine's, or the record's turn. */
  commit: InBatch<Plan, Done> | InTurn<Plan, Done>;
}

/** An Idempotency-Key completed by the write's own batch. */
export interface KeyCompletion {
  claim: KeyClaim;
  answer: KeyAnswer;
  now: number;
}

/** A plan the engine commits as one D1 batch that starts with the write's ledger row. */
export interface InBatch<Plan, Done> {
  /** The answer a completed key replays (its body is rebuilt from the ledger); none for a write no key names. */
  keyAnswer?: KeyAnswer;
  /** The plan's statements: the ledger row first (if it has one), the key's completion (if any) in them. */
  statements(plan: Plan, key: KeyCompletion | undefined): D1PreparedStatement[];
  /** What the committed batch did, or AGAIN when it found records moved on and wrote nothing. */
  committed(plan: Plan, results: readonly D1Result<unknown>[]): Done | typeof AGAIN;
  /** What an earlier run of the same write id did, from its ledger row and the records it answered. */
  replayed?(outcome: LedgerOutcome, records: RecordOut[]): Done;
  /** After a race lost on a version guard, before deciding again: learn what moved. */
  lost?(plan: Plan, deadline: number): Promise<void>;
  /**
   * A refusal of D1's the kind answers itself: AGAIN to decide again (a race, rows to leave out),
   * what the write did, or undefined to have it explained.
   */
  refused?(plan: Plan, error: unknown): Promise<Done | typeof AGAIN | undefined>;
}

/** A plan that commits in its record's turn: the record's queue groups it with the patches waiting. */
export interface InTurn<Plan, Done> {
  turn(plan: Plan, claim: KeyClaim | undefined): Promise<PatchAnswer>;
  /** What an applied turn did. */
  applied(record: RecordOut): Done;
}
