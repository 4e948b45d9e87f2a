import { expect } from 'vitest';

/**
 * The kept totals a database should hold, computed from its records as they are (their `deleted`
 * and their index rows), beside the totals it holds: every workspace's groups and object rows.
 */

/** The types of fields kept totals group by (a unique field's groups are its records: it has none). */
const GROUPED = new Set(['select', 'boolean', 'text', 'email', 'integer', 'reference', 'date']);

interface Totals {
  records: number;
  counts: Record<string, number>;
  sums: Record<string, number>;
}

async function expected(db: D1Database): Promise<Map<string, Totals>> {
  const rows = await db
    .prepare(
      `SELECT w.workspace_id AS ws, r.object_id AS object, r.id, i.field, i.value, f.type, f.is_unique AS uniq
       FROM records r JOIN record_workspaces w ON w.record_id = r.id
         LEFT JOIN record_index i ON i.record_id = r.id
         LEFT JOIN index_fields f ON f.object_id = i.object_id AND f.name = i.field
       WHERE r.deleted = 0`,
    )
    .all<{
      ws: number;
      object: number;
      id: number;
      field: string | null;
      value: unknown;
      type: string | null;
      uniq: number | null;
    }>();
  const records = new Map<
    string,
    { ws: number; object: number; groups: [string, unknown][]; numbers: [string, unknown][] }
  >();
  for (const row of rows.results) {
    const id = `${row.ws}/${row.id}`;
    const record = records.get(id) ?? { ws: row.ws, object: row.object, groups: [], numbers: [] };
    if (row.field !== null && GROUPED.has(row.type ?? '') && !row.uniq) record.groups.push([row.field, row.value]);
    if (row.field !== null && (row.type === 'number' || row.type === 'integer'))
      record.numbers.push([row.field, row.value]);
    records.set(id, record);
  }
  const totals = new Map<string, Totals>();
  const add = (key: string, values: [string, unknown][]): void => {
    const t = totals.get(key) ?? { records: 0, counts: {}, sums: {} };
    t.records += 1;
    for (const [field, value] of values)
      if (typeof value === 'number') {
        t.counts[field] = (t.counts[field] ?? 0) + 1;
        t.sums[field] = (t.sums[field] ?? 0) + value;
      }
    totals.set(key, t);
  };
  for (const { ws, object, groups, numbers } of records.values()) {
    add(JSON.stringify([ws, object, '', '']), numbers);
    for (const [field, value] of groups) if (value !== null) add(JSON.stringify([ws, object, field, value]), numbers);
  }
  return totals;
}

/** Asserts that every kept total equals a count of the records, and every index row knows if its record is live. */
export async function expectTotalsExact(db: D1Database): Promise<number> {
  const stale = await db
    .prepare('SELECT count(*) AS n FROM record_index i JOIN records r ON r.id = i.record_id WHERE i.live = r.deleted')
    .first<{ n: number }>();
  expect(stale?.n).toBe(0);
  const want = await expected(db);
  const kept = await db
    .prepare('SELECT workspace_id AS ws, object_id AS object, field, value, records, counts, sums FROM record_totals')
    .all<{
      ws: number;
      object: number;
      field: string;
      value: unknown;
      records: number;
      counts: string;
      sums: string;
    }>();
  const have = new Map<string, Totals>();
  for (const row of kept.results) {
    const counts = JSON.parse(row.counts) as Record<string, number>;
    const sums = JSON.parse(row.sums) as Record<string, number>;
    // A field none of the group's records holds a number in any longer counts 0.
    for (const [field, n] of Object.entries(counts))
      if (n === 0) {
        expect(Math.abs(sums[field] ?? 0)).toBeLessThan(1e-6);
        delete counts[field];
        delete sums[field];
      }
    have.set(JSON.stringify([row.ws, row.object, row.field, row.value]), { records: row.records, counts, sums });
  }
  expect([...have.keys()].sort()).toEqual([...want.keys()].sort());
  for (const [key, totals] of want) {
    const found = have.get(key) as Totals;
    expect({ key, records: found.records, counts: found.counts }).toEqual({
      key,
      records: totals.records,
      counts: totals.counts,
    });
    for (const [field, sum] of Object.entries(totals.sums)) expect(found.sums[field]).toBeCloseTo(sum, 6);
  }
  return want.size;
}
