/**
 * The write ledger's vocabulary, below every layer that writes. Every write has an id and ends
 * in exactly one ledger row, inserted first in the D1 batch that finishes it: what it committed,
 * or the failure it was answered. A second attempt to finish the same id fails on that row
 * before it changes anything, and the attempt learns the outcome by reading it.
 */

import type { InputProblem } from './problem.ts';

/** What an upsert did to each of its items. */
export type UpsertResult = 'created' | 'updated' | 'unchanged';

/** What a finished write left in the ledger. */
export type LedgerOutcome =
  /** Record writes: each record it answered, at the version it answered (an upsert: and what it did to each). */
  | { r: [recordId: number, version: number][]; u?: UpsertResult[] }
  /** A create: `count` records with consecutive ids from `first`, each at version 1. */
  | { c: [first: number, count: number] }
  /** Any other write (the admin API): its answer. */
  | { a: { status: number; body: string } }
  /**
   * A write answered with this failure status and its problems (one as `p`, several as `e`):
   * nothing else was written.
   */
  | { f: number; p?: InputProblem; e?: InputProblem[] };

/** Characters of the time prefix of a write id: milliseconds in base 36, fixed width. */
const TIME_WIDTH = 9;

/** The prefix every write id made at `time` starts with; ids sort by it. */
export function writeIdTime(time: number): string {
  return Math.max(0, Math.floor(time)).toString(36).padStart(TIME_WIDTH, '0');
}

/**
 * A new write id: time first (so old ids can be pruned by range), then its tenant (`t<id>-`, none
 * for the default tenant), then randomness. The database refuses a write of a tenant that left it.
 */
export function newWriteId(tenantId = 1, now: number = Date.now()): string {
  return `${writeIdTime(now)}-${tenantId === 1 ? '' : `t${tenantId}-`}${crypto.randomUUID()}`;
}

/**
 * The id of a write that follows `writeId` on another tenant's database (a new tenant's first
 * user): the same for the same `writeId`, so a retry finds it, and naming `tenantId`.
 */
export function followingWriteId(writeId: string, tenantId: number, what: string): string {
  const rest = writeId.slice(TIME_WIDTH + 1).replace(/^t[0-9]+-/, '');
  return `${writeId.slice(0, TIME_WIDTH)}-${tenantId === 1 ? '' : `t${tenantId}-`}${rest}/${what}`;
}

/** The failure a finished write was answered, or undefined when it committed. */
export function failureOf(outcome: LedgerOutcome): { status: number; problem?: InputProblem } | undefined {
  if (!('f' in outcome)) return undefined;
  const problem = outcome.p ?? outcome.e?.[0];
  return problem === undefined ? { status: outcome.f } : { status: outcome.f, problem };
}

/** Every problem of a finished write's failure, each with the status it was answered. */
export function problemsOf(outcome: LedgerOutcome): InputProblem[] {
  if (!('f' in outcome)) return [];
  const problems = outcome.e ?? (outcome.p === undefined ? [] : [outcome.p]);
  return problems.map((problem) => ({ ...problem, status: problem.status ?? outcome.f }));
}

/** A failure's ledger outcome: its status and every problem it was answered with. */
export function failedWith(status: number, problems: readonly InputProblem[] = []): LedgerOutcome {
  if (problems.length === 0) return { f: status };
  return problems.length === 1 ? { f: status, p: problems[0] as InputProblem } : { f: status, e: [...problems] };
}
