/**
 * Kept totals as they should be, counted apart from the service's triggers: from every live record
 * shared with a workspace and its index rows typed by their fields, each workspace's object row
 * and groups, with the count and sum of the numbers their records hold. Both the integration
 * tests (D1) and the simulator (SQLite) read the rows and compare here.
 */

/** The SQL of the rows the count starts from, for records whose id is in [?1, ?2). */
export const RECORD_ROWS = `SELECT w.workspace_id AS ws, r.object_id AS object, r.id, i.field, i.value, f.type,
    f.is_unique AS uniq
  FROM records r JOIN record_workspaces w ON w.record_id = r.id
    LEFT JOIN record_index i ON i.record_id = r.id
    LEFT JOIN index_fields f ON f.object_id = i.object_id AND f.name = i.field
  WHERE r.deleted = 0 AND r.id >= ?1 AND r.id < ?2`;

/** The SQL of the kept totals of workspaces whose id is in [?1, ?2). */
export const KEPT_ROWS = `SELECT workspace_id AS ws, object_id AS object, field, value, records, counts, sums
  FROM record_totals WHERE workspace_id >= ?1 AND workspace_id < ?2`;

/** The SQL of index rows whose `live` differs from their record's (a rollup's row, kept apart, has none). */
export const STALE_ROWS = `SELECT count(*) AS n FROM record_index i JOIN records r ON r.id = i.record_id
  WHERE i.live = r.deleted AND i.role <> 4 AND r.id >= ?1 AND r.id < ?2`;

export interface RecordRow {
  ws: number;
  object: number;
  id: number;
  field: string | null;
  value: unknown;
  type: string | null;
  uniq: number | null;
}

export interface KeptRow {
  ws: number;
  object: number;
  field: string;
  value: unknown;
  records: number;
  counts: string;
  sums: string;
}

interface Totals {
  records: number;
  counts: Record<string, number>;
  sums: Record<string, number>;
}

/** The types of fields kept totals group by (a unique field's groups are its records: it has none). */
const GROUPED = new Set(['select', 'boolean', 'text', 'email', 'integer', 'reference', 'date']);

function expected(rows: readonly RecordRow[]): Map<string, Totals> {
  const records = new Map<
    string,
    { ws: number; object: number; groups: [string, unknown][]; numbers: [string, unknown][] }
  >();
  for (const row of rows) {
    const id = `${row.ws}/${row.id}`;
    const record = records.get(id) ?? { ws: row.ws, object: row.object, groups: [], numbers: [] };
    if (row.field !== null && GROUPED.has(row.type ?? '') && !row.uniq) record.groups.push([row.field, row.value]);
    if (row.field !== null && (row.type === 'number' || row.type === 'integer'))
      record.numbers.push([row.field, row.value]);
    records.set(id, record);
  }
  const totals = new Map<string, Totals>();
  const add = (key: string, numbers: [string, unknown][]): void => {
    const t = totals.get(key) ?? { records: 0, counts: {}, sums: {} };
    t.records += 1;
    for (const [field, value] of numbers)
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

function kept(rows: readonly KeptRow[]): Map<string, Totals> {
  const have = new Map<string, Totals>();
  for (const row of rows) {
    const counts = JSON.parse(row.counts) as Record<string, number>;
    const sums = JSON.parse(row.sums) as Record<string, number>;
    // A field none of the group's records holds a number in any longer counts 0 (its sum ~0).
    for (const [field, n] of Object.entries(counts))
      if (n === 0 && Math.abs(sums[field] ?? 0) < 1e-6) {
        delete counts[field];
        delete sums[field];
      }
    have.set(JSON.stringify([row.ws, row.object, row.field, row.value]), { records: row.records, counts, sums });
  }
  return have;
}

const close = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b));

/** How the kept totals differ from a count of the records: nothing when they agree. */
export function totalsDiffer(records: readonly RecordRow[], keptRows: readonly KeptRow[]): string[] {
  const want = expected(records);
  const have = kept(keptRows);
  const problems: string[] = [];
  for (const key of have.keys()) if (!want.has(key)) problems.push(`totals ${key} kept for no live record`);
  for (const [key, totals] of want) {
    const found = have.get(key);
    if (found === undefined) problems.push(`totals ${key} missing`);
    else if (
      found.records !== totals.records ||
      JSON.stringify(Object.entries(found.counts).sort()) !== JSON.stringify(Object.entries(totals.counts).sort()) ||
      Object.entries(totals.sums).some(([field, sum]) => !close(found.sums[field] ?? NaN, sum))
    )
      problems.push(`totals ${key}: kept ${JSON.stringify(found)}, counted ${JSON.stringify(totals)}`);
  }
  return problems;
}
