import { expect } from 'vitest';
import { KEPT_ROWS, RECORD_ROWS, STALE_ROWS, totalsDiffer, type KeptRow, type RecordRow } from '../totals-fold.ts';

/** Ids of every tenant's block: the whole database. */
const ALL = [0, Number.MAX_SAFE_INTEGER] as const;

/**
 * Asserts that every kept total of the database equals a count of its records, and that every index
 * row knows whether its record is live; answers how many totals there are.
 */
export async function expectTotalsExact(db: D1Database): Promise<number> {
  expect(
    (
      await db
        .prepare(STALE_ROWS)
        .bind(...ALL)
        .first<{ n: number }>()
    )?.n,
  ).toBe(0);
  const records = (
    await db
      .prepare(RECORD_ROWS)
      .bind(...ALL)
      .all<RecordRow>()
  ).results;
  const kept = (
    await db
      .prepare(KEPT_ROWS)
      .bind(...ALL)
      .all<KeptRow>()
  ).results;
  expect(totalsDiffer(records, kept)).toEqual([]);
  return kept.length;
}
