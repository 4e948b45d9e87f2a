import type { HistoryRow } from '../domain/history.ts';
import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import type { D1 } from './sessions.ts';
import { MAX_PAGE_BYTES } from './store.ts';

// A record's changes below a version, newest first, by the (record, version) index. Their sizes
// first (`octet_length` reads no value): only those that start within a page's bytes are read whole.
const HISTORY = `SELECT c.version, c.type, c.at, c.by, c.data, c.was,
    m.before + m.size > ${MAX_PAGE_BYTES} AS size_cut FROM (
    SELECT p.*, coalesce(sum(p.size) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before FROM (
      SELECT c.seq, octet_length(c.data) + coalesce(octet_length(c.was), 0) AS size FROM changes c
      WHERE c.record_id = ?1 AND c.version < ?2
      ORDER BY c.version DESC LIMIT ?3) p) m
  CROSS JOIN changes c ON c.seq = m.seq
  WHERE m.before <= ${MAX_PAGE_BYTES}
  ORDER BY c.version DESC`;

/**
 * Up to `limit` kept changes of a record with a version below `below`, newest first, fewer when
 * their size passes a page's (`sizeCut`: more may follow). One D1 round trip.
 */
export async function historyRows(
  db: D1,
  meter: Meter,
  recordId: number,
  below: number,
  limit: number,
): Promise<{ rows: HistoryRow[]; sizeCut: boolean }> {
  const { results } = await retrying(() =>
    meter.d1(() => db.prepare(HISTORY).bind(recordId, below, limit).all<HistoryRow & { size_cut: number }>()),
  );
  const rows = results.map(({ size_cut: _cut, ...row }) => row);
  return { rows, sizeCut: results.at(-1)?.size_cut === 1 };
}
