import type { Aggregate, GroupRow, MeasureOp } from './aggregate.ts';

/**
 * Aggregates answered from totals kept per group: each workspace keeps, for every indexed field of
 * an object, a row per value its live records hold (how many, and the count and sum of each of
 * their indexed numbers), and a row for the object (all its live records). An aggregate of all of
 * an object's records (no filter), by at most one indexed field (not unique, not a value of
 * several, not by an interval), counting or adding up indexed numbers, reads those rows instead of the records:
 * exact whatever the object's size. The group of blanks is the object's row less the others.
 */

/** Groups an aggregate reads kept totals for at most: past them it reads the records. */
export const KEPT_GROUPS = 4000;

/** The types whose values the totals group by as an aggregate groups them (a date-time needs an interval). */
const KEPT_TYPES = new Set(['select', 'boolean', 'text', 'email', 'integer', 'reference', 'date']);

export interface KeptPlan {
  /** The field the groups are by; none: one group. */
  field?: string;
  measures: { op: Exclude<MeasureOp, 'min' | 'max'>; field?: string }[];
}

/** A row of kept totals: a group's value (the object's row: none) and what its records hold. */
export interface TotalsRow {
  value: unknown;
  records: number;
  /** How many of its records hold a number in each indexed field, and their sum, by field name. */
  counts: Record<string, number>;
  sums: Record<string, number>;
}

/** The plan by which kept totals answer the aggregate, or none when they cannot. */
export function keptPlan(aggregate: Aggregate): KeptPlan | undefined {
  if (aggregate.filtered || aggregate.groups.length > 1) return undefined;
  const [group] = aggregate.groups;
  if (group !== undefined) {
    const { field } = group;
    if (group.each || group.unique || group.interval !== undefined || field.kind !== 'value') return undefined;
    if (!field.indexed || !field.ready || !KEPT_TYPES.has(field.type)) return undefined;
  }
  const measures: KeptPlan['measures'] = [];
  for (const { op, field } of aggregate.measures) {
    if (op === 'count') measures.push({ op });
    else if (op === 'min' || op === 'max' || field === undefined || field.kind !== 'value') return undefined;
    else if (!field.indexed || !field.ready || (field.type !== 'number' && field.type !== 'integer')) return undefined;
    else measures.push({ op, field: field.name });
  }
  return { ...(group === undefined ? {} : { field: group.field.name }), measures };
}

function measured(plan: KeptPlan, row: TotalsRow): (number | null)[] {
  return plan.measures.map(({ op, field }) => {
    if (op === 'count' || field === undefined) return row.records;
    const count = row.counts[field] ?? 0;
    const sum = row.sums[field] ?? 0;
    if (count <= 0) return null;
    return op === 'sum' ? sum : sum / count;
  });
}

/**
 * The aggregate's groups from the totals: `groups` in their order, then the group of blanks (what
 * the object's row holds beyond them) when it holds a record. No group asked: the object's row.
 */
export function keptGroups(plan: KeptPlan, object: TotalsRow | undefined, groups: readonly TotalsRow[]): GroupRow[] {
  const all: TotalsRow = object ?? { value: null, records: 0, counts: {}, sums: {} };
  if (plan.field === undefined) return [{ key: [], values: measured(plan, all) }];
  const rest: TotalsRow = { value: null, records: all.records, counts: { ...all.counts }, sums: { ...all.sums } };
  const found = groups.filter((row) => row.records > 0);
  for (const row of found) {
    rest.records -= row.records;
    for (const [field, n] of Object.entries(row.counts)) rest.counts[field] = (rest.counts[field] ?? 0) - n;
    for (const [field, n] of Object.entries(row.sums)) rest.sums[field] = (rest.sums[field] ?? 0) - n;
  }
  const rows = found.map((row) => ({ key: [row.value], values: measured(plan, row) }));
  if (rest.records > 0) rows.push({ key: [null], values: measured(plan, rest) });
  return rows;
}
