import type { RowsSeen } from '../domain/access.ts';
import type { Aggregate, GroupBy, GroupRow, Interval, Measure } from '../domain/aggregate.ts';
import { KEPT_GROUPS, keptGroups, keptPlan, type KeptPlan, type TotalsRow } from '../domain/aggregate-totals.ts';
import type { Meter } from './meter.ts';
import { matching, workspaceWalk } from './query.ts';
import { elementsOf, numberOf, Sql, valueOf } from './query-sql.ts';
import { retrying } from './retry.ts';
import type { D1 } from './sessions.ts';

/**
 * The SQL of aggregates. One round trip of two statements over the same walk: the workspace's
 * records of the object in id order (its `o` keys), at most `scanOf` of them (20,000; fewer when
 * a record falls in several groups): how many the walk holds (its keys alone), and the groups of
 * those the filter keeps, each measured, in the groups' order (a blank value last). Past the
 * bound the aggregate covers the first records only and says so (`exact: false`): the rows a
 * request reads stay under 100,000 whatever the object's size, and it never runs long. An
 * aggregate the workspace's kept totals answer (see domain/aggregate-totals.ts) reads those
 * instead, when the caller may read every record: a row per group, exact at any size.
 */

/** Records an aggregate reads at most. */
export const AGGREGATE_SCAN = 20_000;
/**
 * D1 rows an aggregate may read: it counts each record's key twice and its row once, and every
 * row its groups make (the elements a value of several is read as, and what the grouping sorts).
 */
const ROW_BUDGET = 90_000;

/** Records the aggregate reads at most: fewer when a record falls in several groups (its options, its ids). */
export function scanOf(groups: readonly GroupBy[]): number {
  const fanOut = groups.reduce((n, group) => n * group.fanOut, 1);
  const perRecord = 3 + (groups.length === 0 ? 0 : 2 * fanOut);
  return Math.max(1, Math.min(AGGREGATE_SCAN, Math.floor(ROW_BUDGET / perRecord)));
}

export interface AggregatePage {
  groups: GroupRow[];
  exact: boolean;
  /** More groups follow this page. */
  more: boolean;
}

/** A date's day, as SQLite reads it: a date field's text, else a date-time's epoch milliseconds. */
const dayOf = (value: string, isDate: boolean): string => (isDate ? value : `datetime(${value} / 1000.0, 'unixepoch')`);

/** The group a date falls in (UTC): its day, its week's Monday, its month, quarter or year. */
function bucket(day: string, interval: Interval): string {
  switch (interval) {
    case 'day':
      return `date(${day})`;
    case 'week':
      return `date(${day}, 'weekday 0', '-6 days')`;
    case 'month':
      return `strftime('%Y-%m', ${day})`;
    case 'quarter':
      return `strftime('%Y', ${day}) || '-Q' || ((CAST(strftime('%m', ${day}) AS INTEGER) + 2) / 3)`;
    case 'year':
      return `strftime('%Y', ${day})`;
  }
}

/** A group's value of record `r` (or, for a value of several, of its element `e<i>`). */
function groupValue(sql: Sql, group: GroupBy, i: number): { value: string; join: string } {
  const raw = valueOf(sql, group.field);
  if (group.each) {
    // Each option or id its own group; none (or an empty list) the blank group.
    const list = `(SELECT CASE WHEN json_array_length(v) > 0 THEN v ELSE '[null]' END
      FROM (SELECT ${elementsOf(raw)} AS v))`;
    return { value: `e${i}.value`, join: `CROSS JOIN json_each(${list}) e${i}` };
  }
  if (group.interval === undefined) return { value: raw, join: '' };
  const isDate = group.field.type === 'date';
  return { value: `(SELECT ${bucket(dayOf('d', isDate), group.interval)} FROM (SELECT ${raw} AS d))`, join: '' };
}

function measureOf(sql: Sql, measure: Measure): string {
  if (measure.op === 'count' || measure.field === undefined) return 'count(*)';
  // Of a number field, numbers only: a text or a boolean kept from before its type changed is no value.
  const numeric = measure.field.type === 'number' || measure.field.type === 'integer';
  const value = numeric
    ? `(SELECT CASE WHEN typeof(v) IN ('integer', 'real') THEN v END
        FROM (SELECT ${numberOf(sql, measure.field)} AS v))`
    : valueOf(sql, measure.field);
  // SQLite's sum() fails past 2^63 in whole numbers: total() adds as doubles, as JSON holds them.
  if (measure.op === 'sum') return `CASE WHEN count(${value}) > 0 THEN total(${value}) END`;
  return `${measure.op}(${value})`;
}

interface StoredTotals {
  value: unknown;
  records: number;
  counts: string;
  sums: string;
}

const totalsRow = (row: StoredTotals): TotalsRow => ({
  value: row.value,
  records: row.records,
  counts: JSON.parse(row.counts) as Record<string, number>,
  sums: JSON.parse(row.sums) as Record<string, number>,
});

export class Aggregates {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
    /** The records the caller's role lets them see, when it does not let them see all. */
    private readonly seen?: RowsSeen,
  ) {}

  /** The groups of the aggregate after the first `offset`, at most `limit`. One round trip (two past KEPT_GROUPS). */
  async groups(workspaceId: number, aggregate: Aggregate, offset: number): Promise<AggregatePage> {
    const plan = this.seen === undefined ? keptPlan(aggregate) : undefined;
    const kept = plan === undefined ? undefined : await this.kept(workspaceId, aggregate.objectId, plan);
    if (kept !== undefined) {
      const { limit } = aggregate;
      return { groups: kept.slice(offset, offset + limit), exact: true, more: kept.length > offset + limit };
    }
    return this.scanned(workspaceId, aggregate, offset);
  }

  /** The groups from kept totals; none when the field has more than KEPT_GROUPS values. */
  private async kept(workspaceId: number, objectId: number, plan: KeptPlan): Promise<GroupRow[] | undefined> {
    const columns = 'value, records, counts, sums';
    const [object, groups] = await retrying(() =>
      this.meter.d1(() =>
        this.db.batch([
          this.db
            .prepare(
              `SELECT ${columns} FROM record_totals
               WHERE workspace_id = ?1 AND object_id = ?2 AND field = '' AND value = ''`,
            )
            .bind(workspaceId, objectId),
          this.db
            .prepare(
              `SELECT ${columns} FROM record_totals WHERE workspace_id = ?1 AND object_id = ?2 AND field = ?3
               ORDER BY value LIMIT ?4`,
            )
            .bind(workspaceId, objectId, plan.field ?? '', plan.field === undefined ? 0 : KEPT_GROUPS + 1),
        ]),
      ),
    );
    const rows = ((groups?.results ?? []) as StoredTotals[]).map(totalsRow);
    if (rows.length > KEPT_GROUPS) return undefined;
    const [all] = ((object?.results ?? []) as StoredTotals[]).map(totalsRow);
    return keptGroups(plan, all, rows);
  }

  private async scanned(workspaceId: number, aggregate: Aggregate, offset: number): Promise<AggregatePage> {
    const { query, groups, measures, limit } = aggregate;
    const sql = new Sql();
    const scan = scanOf(groups);
    // One record past the bound tells whether there are more; the aggregate reads up to it.
    const walk = `${workspaceWalk(sql, query, false, undefined, scan + 1)} c`;
    const counted = this.db
      .prepare(`SELECT count(*) AS seen FROM ${walk}`)
      .bind(JSON.stringify(sql.params), workspaceId);
    const text = new Sql();
    const from = `${workspaceWalk(text, query, false, undefined, scan)} c`;
    const values = groups.map((group, i) => groupValue(text, group, i));
    const names = values.map((_, i) => `g${i}`);
    const select = [
      ...values.map(({ value }, i) => `${value} AS g${i}`),
      ...measures.map((measure, i) => `${measureOf(text, measure)} AS m${i}`),
    ];
    const where = matching(text, query, this.seen);
    const order = names.flatMap((name) => [`${name} IS NULL`, name]);
    const statement = `SELECT ${select.join(', ')}
      FROM ${from} CROSS JOIN records r ON r.id = c.id ${values.map(({ join }) => join).join(' ')}
      WHERE ${where}
      ${names.length === 0 ? '' : `GROUP BY ${names.join(', ')} ORDER BY ${order.join(', ')}`}
      LIMIT ${limit + 1} OFFSET ${offset}`;
    const [seen, rows] = await retrying(() =>
      this.meter.d1(() =>
        this.db.batch([counted, this.db.prepare(statement).bind(JSON.stringify(text.params), workspaceId)]),
      ),
    );
    const n = (seen?.results[0] as { seen: number } | undefined)?.seen ?? 0;
    const found = (rows?.results ?? []) as Record<string, number | string | null>[];
    // No group: an aggregate without groups over no record still answers its one group (a count of 0).
    const page = found.slice(0, limit).map((row) => ({
      key: names.map((name) => row[name]),
      values: measures.map((_, i) => row[`m${i}`] ?? null),
    }));
    return { groups: page, exact: n <= scan, more: found.length > limit };
  }
}
