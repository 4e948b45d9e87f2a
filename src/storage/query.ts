import type { RowsSeen } from '../domain/access.ts';
import type { Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/object-def.ts';
import { RELEVANCE_TIERS, type Expr, type FieldRef, type Query, type SystemField } from '../domain/query.ts';
import { searchWords } from '../core/fold.ts';
import { pastPrefix } from '../core/characters.ts';
import type { RecordOut } from '../schemas/record.ts';
import type { Meter } from './meter.ts';
import { movesOf, splitSince, unmoved, SINCE, type Position, type Since } from './query-moves.ts';
import { balanced, compile, missing, operand, Sql, startsWords, valueOf, wholeWords } from './query-sql.ts';
import { datetimeKey } from './record-index.ts';
import { retrying } from './retry.ts';
import { countOf as countTerms, overWorkspace, searchPlan, type SearchPlan, type Driver } from './search-plan.ts';
import type { D1 } from './sessions.ts';
import { idRange, tenantOfId } from '../domain/tenant.ts';
import {
  callerOf,
  callerStatement,
  OBJECTS_IN_VIEW,
  recordsOf,
  sizedPage,
  toObjectDef,
  type ObjectRow,
  type RecordReadRow,
} from './store.ts';

/**
 * The SQL of record queries. A query's values never enter the SQL text: they travel in one JSON
 * array bound to `?1` and are read with `?1 ->> '$[k]'`, so no statement nears D1's bound
 * parameter limit and a field name is only ever a value.
 *
 * Every plan walks candidates in the page's order and stops at the page's end, so its rows read
 * grow with the page, not with the workspace:
 * - a search by relevance walks, for each tier of relevance, the records holding one search term
 *   (`name_terms`, per workspace) in id order (`search-plan.ts` chooses the term);
 * - a sort by creation time, update time, name or an indexed field walks that key of the
 *   workspace (`record_sort`) in order, then (an indexed field) the records without a value;
 * - a sort by id walks the records holding a search term, or the entries of an `eq` on an indexed
 *   field, or the workspace's records;
 * - other sorts (objectId, createdBy, updatedBy, several keys) let SQL order the candidates.
 * A walk reads at most SCAN_BOUND candidates a page: a page that reaches the bound before it is
 * full ends there with a cursor (only a filter that few candidates meet gets there), so a query
 * never runs long and always progresses.
 */

/** Candidates a page reads at most. */
export const SCAN_BOUND = 5000;
/** Fewer candidates than this (a rare search word, a rare indexed value) are ordered by SQL for a sort. */
const NARROW = 1000;
/**
 * Candidates a count reads at most (and their records): past them it is a lower bound too, so
 * a count reads rows bounded like a page's, however few records match.
 */
export const COUNT_SCAN = 20_000;
/**
 * Records of the objects a query requires that SQL orders for a sort, at most, when the walk of
 * the workspace's key meets too few of them to fill a page (other objects' records come first).
 */
const SORTED_OBJECTS = 20_000;

/** The system fields each workspace keeps a sort key of (`record_sort.key`). */
const SORT_KEYS: Partial<Record<SystemField, string>> = { createdAt: 'c', updatedAt: 'u', name: 'n' };

/** The objects whose current definition lists the workspace `?`, and their fields' index builds. */

export interface View {
  caller: Caller | undefined;
  objects: ObjectDef[];
  building: Map<number, string[]>;
}

export type { Position };

export interface QueryPage {
  records: RecordOut[];
  /** Each record's position (a page cut short by its size continues after one). */
  positions: Position[];
  /** Where the next page starts, when there may be one. */
  next: Position | undefined;
  count?: { value: number; exact: boolean };
}

/** The conditions every match must meet: the filter's top-level conjuncts. */
function topConditions(query: Query): Extract<Expr, { field: FieldRef }>[] {
  const filter = query.filter;
  const top = filter === undefined ? [] : 'and' in filter ? filter.and : [filter];
  return top.filter((e): e is Extract<Expr, { field: FieldRef }> => 'field' in e);
}

/**
 * An `eq` or `in` on an indexed field (or an `eq` or `contains` of one id on a reference of several)
 * that every match must meet: the walk can read the workspace's keys of it.
 */
function driverOf(query: Query): { field: FieldRef; values: unknown[] } | undefined {
  for (const e of topConditions(query)) {
    if (e.field.kind !== 'value' || !e.field.ready) continue;
    // A reference of several ids has a key per id: a walk of several ids could meet a record twice.
    if (e.field.multiple === true) {
      if (e.op === 'eq' || e.op === 'contains') return { field: e.field, values: [e.value] };
    } else if (e.op === 'eq' || e.op === 'in')
      return { field: e.field, values: e.op === 'eq' ? [e.value] : (e.value as unknown[]) };
  }
  return undefined;
}

/** A reference of several ids: a key per id, so no walk of its keys is in one order of records. */
const several = (field: FieldRef): boolean => field.kind === 'value' && field.multiple === true;

const BOUNDING = { eq: '=', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;
type Bounding = keyof typeof BOUNDING;
const RANGE_OPS = new Set<string>(['lt', 'lte', 'gt', 'gte', 'startsWith']);

/**
 * The conditions on a kept key that every match must meet (an `eq`, `lt`, `lte`, `gt`, `gte` of
 * the field the key keeps, and a `startsWith` as the range of texts with its prefix: `gte` the
 * prefix, `lt` the least text past them), as SQL on `value` of `record_sort`: a walk of the key
 * reads only the entries between them. Empty when the filter bounds the key nowhere.
 */
function boundsOf(sql: Sql, query: Query, key: SortKeyOf, ops: readonly Bounding[] = BOUNDS): string[] {
  const bounds: string[] = [];
  for (const e of topConditions(query)) {
    if (several(e.field) || keyOf(e.field)?.name !== key.name) continue;
    if (e.op === 'startsWith' && typeof e.value === 'string') {
      const past = pastPrefix(e.value);
      if (ops.includes('gte')) bounds.push(`value >= ${sql.param(e.value)}`);
      if (ops.includes('lt') && past !== undefined) bounds.push(`value < ${sql.param(past)}`);
    } else if (ops.includes(e.op as Bounding))
      bounds.push(`value ${BOUNDING[e.op as Bounding]} ${operand(sql, e.field, e.value)}`);
  }
  return bounds;
}
const BOUNDS = Object.keys(BOUNDING) as Bounding[];

/**
 * A range (`lt`, `lte`, `gt`, `gte`, `startsWith`) on a kept key other than `except` that every match must meet:
 * its entries in `record_sort` hold every match, in the key's order, not the page's.
 */
function rangeOf(query: Query, except?: string): SortKeyOf | undefined {
  for (const e of topConditions(query)) {
    const key = keyOf(e.field);
    if (RANGE_OPS.has(e.op) && !several(e.field) && key !== undefined && key.name !== except) return key;
  }
  return undefined;
}

/** The entries of the workspace's (`?2`) key between the filter's bounds of it, at most `bound` of them. */
function rangeWalk(sql: Sql, query: Query, key: SortKeyOf, bound?: number): string {
  const bounds = boundsOf(sql, query, key).map((b) => `AND ${b}`);
  return `(SELECT record_id AS id FROM record_sort WHERE workspace_id = ?2 AND key = ${sql.param(key.name)}
      ${bounds.join(' ')} ${bound === undefined ? '' : `LIMIT ${bound}`}) c`;
}

/**
 * The entries of the workspace's (`?2`) key between the filter's bounds of it, in id order after
 * `from`, at most `bound` of them: SQL reads them all to order them (a walk of a range known to be narrow).
 */
function rangeIdWalk(
  sql: Sql,
  query: Query,
  key: SortKeyOf,
  desc: boolean,
  from: number | undefined,
  bound: number,
): string {
  const bounds = boundsOf(sql, query, key).map((b) => `AND ${b}`);
  const past = from === undefined ? '' : `AND record_id ${desc ? '<' : '>'} ${sql.param(from)}`;
  return `(SELECT record_id AS id FROM record_sort WHERE workspace_id = ?2 AND key = ${sql.param(key.name)}
      ${bounds.join(' ')} ${past} ORDER BY record_id ${desc ? 'DESC' : ''} LIMIT ${bound}) c`;
}

/** Candidates of a short walk: a range that many records meet fills a page within them. */
const PROBE = (limit: number): number => 4 * (limit + 1);

/** The records of a tier: how the name meets the search's words, beyond starting with each. */
function tierSql(sql: Sql, tier: number, plan: SearchPlan, driver: Driver): string {
  // The whole name: its runs of letters and digits are the search's, as its `~` term says (a walk
  // of that term reads only such records; one of the workspace reads the record's own terms).
  const whole = plan.whole === undefined ? undefined : sql.param(plan.whole);
  const isWhole =
    whole === undefined
      ? '0'
      : driver.kind === 'workspace'
        ? `EXISTS (SELECT 1 FROM json_each(r.terms) t WHERE t.value = ${whole})`
        : `EXISTS (SELECT 1 FROM name_terms t WHERE t.workspace_id = ?2 AND t.term = ${whole} AND t.record_id = r.id)`;
  if (tier === 0) return driver.kind === 'workspace' ? isWhole : '1';
  if (tier === 1) return `(${wholeWords(sql, plan.distinct)} AND NOT ${isWhole})`;
  return `(NOT ${wholeWords(sql, plan.distinct)})`;
}

/**
 * The ids of the workspace's (`?2`) records that hold a search term, in id order (`desc`: reversed)
 * after `from`, at most `bound` of them.
 */
function termWalk(sql: Sql, driver: Driver, desc: boolean, from: number | undefined, bound: number): string {
  const past = from === undefined ? '' : `AND record_id ${desc ? '<' : '>'} ${sql.param(from)}`;
  const order = `ORDER BY record_id ${desc ? 'DESC' : ''} LIMIT ${bound}`;
  if (driver.kind === 'workspace')
    return `(SELECT record_id AS id FROM record_workspaces WHERE workspace_id = ?2 ${past} ${order})`;
  if (driver.kind === 'term')
    return `(SELECT record_id AS id FROM name_terms WHERE workspace_id = ?2 AND term = ${sql.param(driver.term)}
      ${past} ${order})`;
  // Whole words that start with the search word: few (the plan says so), read whole and ordered.
  return `(SELECT DISTINCT record_id AS id FROM name_terms WHERE workspace_id = ?2
      AND term >= ${sql.param(driver.from)} AND term < ${sql.param(driver.to)} ${past} ${order})`;
}

/**
 * The candidates of a query in id order after `from`, at most `bound` of them: the records that
 * hold the search's term, or the workspace's keys of an `eq` on an indexed field every match must
 * meet, or the workspace's records.
 */
function idWalk(
  sql: Sql,
  query: Query,
  plan: SearchPlan | undefined,
  desc: boolean,
  from: number | undefined,
  bound?: number,
): string {
  if (plan !== undefined) return `${termWalk(sql, plan.all, desc, from, bound ?? -1)} c`;
  const driver = driverOf(query);
  const past = from === undefined ? '' : `AND record_id ${desc ? '<' : '>'} ${sql.param(from)}`;
  const order = `ORDER BY record_id ${desc ? 'DESC' : ''} ${bound === undefined ? '' : `LIMIT ${bound}`}`;
  if (driver === undefined) return `${workspaceWalk(sql, query, desc, from, bound)} c`;
  // One value: its entries, in id order as kept. Several (`in`): each value's entries, ordered together.
  let matches: string;
  if (driver.values.length === 1) matches = `= ${operand(sql, driver.field, driver.values[0])}`;
  else {
    const items = sql.list(driver.values);
    const set = driver.field.type === 'datetime' ? datetimeKey('value') : 'value';
    matches = `IN (SELECT ${set} FROM ${items})`;
  }
  return `(SELECT record_id AS id FROM record_sort WHERE workspace_id = ?2
      AND key = ${sql.param(`f:${driver.field.name}`)} AND value ${matches}
      ${past} ${order}) c`;
}

/** Objects a walk reads the records of one by one, together: "a few". */
const FEW_OBJECTS = 10;

/**
 * The objects every match is of: a top-level `eq` on `objectId`, or an `in` of a few, when the
 * filter has one.
 */
function objectsOf(query: Query): number[] | undefined {
  for (const c of topConditions(query)) {
    if (c.field.kind !== 'system' || c.field.name !== 'objectId') continue;
    const ids = c.op === 'eq' ? [c.value] : c.op === 'in' ? (c.value as unknown[]) : undefined;
    if (ids !== undefined && ids.length <= FEW_OBJECTS && ids.every((id) => typeof id === 'number'))
      return [...new Set(ids as number[])];
  }
  return undefined;
}

/**
 * What a query matches when the workspace's totals count it: every live record (no filter, no
 * search), or those of one object (a filter of nothing but `objectId` equal to it).
 */
function totalledObjects(query: Query): number | 'all' | undefined {
  if (query.search !== undefined || query.namesDeleted) return undefined;
  if (query.filter === undefined) return 'all';
  const top = 'and' in query.filter ? query.filter.and : [query.filter];
  const ids = new Set(
    top.map((e) =>
      'field' in e && e.field.kind === 'system' && e.field.name === 'objectId' && e.op === 'eq' ? e.value : undefined,
    ),
  );
  const [id] = ids;
  return ids.size === 1 && typeof id === 'number' ? id : undefined;
}

/**
 * The workspace's (`?2`) records in id order (`desc`: reversed) after `from`, at most `bound`: when
 * every match is of one object (or one of a few), the workspace's keys of it (`o`), so records of
 * other objects are never read.
 */
export function workspaceWalk(sql: Sql, query: Query, desc: boolean, from: number | undefined, bound?: number): string {
  const past = from === undefined ? '' : `AND record_id ${desc ? '<' : '>'} ${sql.param(from)}`;
  const order = `ORDER BY record_id ${desc ? 'DESC' : ''} ${bound === undefined ? '' : `LIMIT ${bound}`}`;
  const objects = objectsOf(query);
  if (objects === undefined)
    return `(SELECT record_id AS id FROM record_workspaces WHERE workspace_id = ?2 ${past} ${order})`;
  const of = (object: number) => `SELECT record_id AS id FROM record_sort WHERE workspace_id = ?2 AND key = 'o'
      AND value = ${sql.param(object)} ${past} ${order}`;
  if (objects.length === 1) return `(${of(objects[0] as number)})`;
  // Each object's walk reads at most the bound; together, in id order.
  const each = objects.map((object) => `SELECT id FROM (${of(object)})`).join(' UNION ALL ');
  return `(SELECT id FROM (${each}) ORDER BY id ${desc ? 'DESC' : ''} ${bound === undefined ? '' : `LIMIT ${bound}`})`;
}

/** SQL that holds for a record `r` the query's filter matches (live unless it names `deleted`) and `seen` shows. */
export function matching(sql: Sql, query: Query, seen: RowsSeen | undefined): string {
  const conditions = [query.namesDeleted ? '1' : 'r.deleted = 0'];
  if (query.filter !== undefined) conditions.push(compile(sql, query.filter));
  if (seen !== undefined) conditions.push(seenBy(sql, seen));
  return balanced(conditions, 'AND');
}

/** The tier and id of a relevance position (a cursor of an earlier release may hold a third value). */
function relevanceAt(after: Position | undefined): { tier: number; id: number | undefined } {
  if (after === undefined) return { tier: 0, id: undefined };
  const tier = Math.min(Math.max(Number(after[0]) || 0, 0), RELEVANCE_TIERS - 1);
  const id = Number(after[1]);
  return { tier, id: Number.isSafeInteger(id) && id > 0 ? id : undefined };
}

export class Queries {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
    /** The tenant the request was routed to: its callers are its users alone. */
    private readonly tenant: number,
    /** The records the caller's role lets them see, when it does not let them see all. */
    private readonly seen?: RowsSeen,
  ) {}

  /**
   * The caller, the definitions of the objects in view of the workspace, and the fields of those
   * objects whose index is still being built (by object id). One round trip.
   */
  async view(keyHash: string, workspaceId: number): Promise<View> {
    const [caller, objects] = await this.read([
      callerStatement(this.db, keyHash, this.tenant),
      this.db.prepare(OBJECTS_IN_VIEW).bind(workspaceId),
    ]);
    const rows = (objects?.results ?? []) as (ObjectRow & { building: string })[];
    return {
      caller: callerOf(caller),
      objects: rows.map(toObjectDef),
      building: new Map(rows.map((row) => [row.id, JSON.parse(row.building) as string[]])),
    };
  }

  /**
   * One page of the query after `after` (a position this walk issued). A count of what the
   * workspace keeps totals of (an object's live records, or all of them), for a caller who may read
   * every record, is read from those totals: one row, exact at any size, read beside the page.
   */
  async page(workspaceId: number, query: Query, after: Position | undefined): Promise<QueryPage> {
    const totalled = query.count && this.seen === undefined ? totalledObjects(query) : undefined;
    if (totalled === undefined) return this.walkedPage(workspaceId, query, after);
    const object = totalled === 'all' ? '' : 'AND object_id = ?2';
    const [page, [counted]] = await Promise.all([
      this.walkedPage(workspaceId, { ...query, count: false }, after),
      this.read([
        this.db
          .prepare(
            `SELECT coalesce(sum(records), 0) AS n FROM record_totals
             WHERE workspace_id = ?1 ${object} AND field = '' AND value = ''`,
          )
          .bind(...(totalled === 'all' ? [workspaceId] : [workspaceId, totalled])),
      ]),
    ]);
    const n = (counted?.results[0] as { n: number } | undefined)?.n ?? 0;
    return { ...page, count: { value: Math.max(n, page.records.length), exact: true } };
  }

  private async walkedPage(workspaceId: number, query: Query, after: Position | undefined): Promise<QueryPage> {
    const words = searchWords(query.search ?? '');
    const planned = words.length === 0 ? undefined : await this.plan(workspaceId, words);
    // Deleted records hold no terms: a search that names `deleted` walks the workspace.
    const plan = planned !== undefined && query.namesDeleted ? overWorkspace(planned) : planned;
    const [first, second] = query.sort;
    // A position of one id in a relevance walk: a search walk begun in id order (as searches were
    // answered before relevance) goes on in id order.
    const byId = query.relevance
      ? plan === undefined || after?.length === 1
      : query.sort.length === 1 && first?.field.name === 'id';
    if (byId) return countingShown(await this.idPage(workspaceId, query, plan, after));
    // Any other walk is by a key a write may move: it passes over records whose place moved since
    // it began.
    const { at, since: seq } = splitSince(after);
    const moves = movesOf(query);
    const start = moves === undefined ? undefined : (seq ?? (await this.feedPosition(workspaceId)));
    const since = moves !== undefined && seq !== undefined ? { seq, moves } : undefined;
    const walked = await (async (): Promise<QueryPage> => {
      if (plan !== undefined && query.relevance) return this.relevancePage(workspaceId, query, plan, at, since);
      const oneKey = query.sort.length === 2 && second?.field.name === 'id' && second.direction === first?.direction;
      const desc = first?.direction === 'desc';
      const keyed = oneKey ? keyOf(first?.field) : undefined;
      // A sort by a kept key walks it, unless a search or an `eq` leaves few candidates: then SQL
      // orders them, and pages are full however rarely the key's walk would meet them.
      if (keyed !== undefined && (plan === undefined || !plan.few)) {
        // An `eq` or a range of the sorted key bounds its own walk: the walk reads by the page.
        const few = await this.fewCandidates(workspaceId, query, plan, keyed.name);
        if (few !== undefined) return this.sortedPage(workspaceId, query, plan, at, since, few);
        const page = await this.keyedPage(workspaceId, query, plan, keyed, desc, at, since);
        if (page.records.length === query.limit || page.next === undefined || at?.length === 1) return page;
        // The walk's bound cut the page short: along the key, other objects' records outnumber the
        // one it requires. SQL orders that object's records instead, when they are not too many.
        const sparse = await this.objectRecords(workspaceId, query);
        return sparse === undefined ? page : this.sortedPage(workspaceId, query, plan, at, since, sparse);
      }
      // A walk begun on a field's keys goes on here while its index is built again (its type
      // changed): the start of its records without a value is the same place in this order.
      const phase = oneKey && at?.length === 1 ? at[0] : undefined;
      if (phase === 'values') return this.sortedPage(workspaceId, query, plan, undefined, since);
      if (phase === 'missing')
        return this.sortedPage(workspaceId, query, plan, [null, desc ? Number.MAX_SAFE_INTEGER : -1], since);
      const few = plan === undefined ? await this.fewCandidates(workspaceId, query, undefined) : undefined;
      return this.sortedPage(workspaceId, query, plan, at, since, few);
    })();
    if (start === undefined) return countingShown(walked);
    const tag = (position: Position): Position => [...position, `${SINCE}${start}`];
    return {
      ...countingShown(walked),
      positions: walked.positions.map(tag),
      next: walked.next === undefined ? undefined : tag(walked.next),
    };
  }

  /**
   * The candidates of a query when fewer than NARROW records can match it: those holding its
   * rarest search word's term (or range of whole words), the keys of its `eq` on an indexed
   * field, the entries of its range on a kept key (but not of the key `except`, which the page
   * walks between the same bounds), or the records of the one object it requires.
   * One round trip; undefined when none is that narrow.
   */
  private async fewCandidates(
    workspaceId: number,
    query: Query,
    plan: SearchPlan | undefined,
    except?: string,
  ): Promise<((sql: Sql) => string) | undefined> {
    const options: { walk: (sql: Sql) => string; count: D1PreparedStatement }[] = [];
    for (const driver of plan?.narrowing ?? []) {
      const { sql, params } = countTerms(driver, NARROW);
      options.push({
        walk: (s) => `${termWalk(s, driver, false, undefined, -1)} c`,
        count: this.db.prepare(sql).bind(JSON.stringify(params), workspaceId),
      });
    }
    const driver = driverOf(query);
    if (driver !== undefined && keyOf(driver.field)?.name !== except) {
      const s = new Sql();
      const walk = idWalk(s, query, undefined, false, undefined, NARROW);
      options.push({
        walk: (sql) => idWalk(sql, query, undefined, false, undefined),
        count: this.db.prepare(`SELECT count(*) AS n FROM ${walk}`).bind(JSON.stringify(s.params), workspaceId),
      });
    }
    const range = rangeOf(query, except);
    if (range !== undefined) {
      const s = new Sql();
      const walk = rangeWalk(s, query, range, NARROW);
      options.push({
        walk: (sql) => rangeWalk(sql, query, range),
        count: this.db.prepare(`SELECT count(*) AS n FROM ${walk}`).bind(JSON.stringify(s.params), workspaceId),
      });
    }
    // Every match of one object: its records in the workspace, when few beside other objects' many.
    if (objectsOf(query) !== undefined) {
      const s = new Sql();
      const walk = `${workspaceWalk(s, query, false, undefined, NARROW)} c`;
      options.push({
        walk: (sql) => `${workspaceWalk(sql, query, false, undefined)} c`,
        count: this.db.prepare(`SELECT count(*) AS n FROM ${walk}`).bind(JSON.stringify(s.params), workspaceId),
      });
    }
    if (options.length === 0) return undefined;
    const counts = await this.read(options.map((option) => option.count));
    let best: { walk: (sql: Sql) => string; n: number } | undefined;
    options.forEach((option, i) => {
      const n = (counts[i]?.results[0] as { n: number } | undefined)?.n ?? NARROW;
      if (n < NARROW && (best === undefined || n < best.n)) best = { walk: option.walk, n };
    });
    return best?.walk;
  }

  /**
   * The records of the objects a query requires (`objectsOf`), as candidates for SQL to order, when
   * the workspace holds at most SORTED_OBJECTS of them: live ones as their kept totals count them,
   * then, deleted ones included, counted up to one more than that. One round trip.
   */
  private async objectRecords(workspaceId: number, query: Query): Promise<((sql: Sql) => string) | undefined> {
    const objects = objectsOf(query);
    if (objects === undefined) return undefined;
    const s = new Sql();
    const walk = `${workspaceWalk(s, query, false, undefined, SORTED_OBJECTS + 1)} c`;
    const [row] = await this.read([
      this.db
        .prepare(
          `SELECT CASE WHEN (SELECT coalesce(sum(records), 0) FROM record_totals WHERE workspace_id = ?2
              AND field = '' AND value = '' AND object_id IN (SELECT value FROM json_each(?3))) > ${SORTED_OBJECTS}
            THEN ${SORTED_OBJECTS + 1} ELSE (SELECT count(*) FROM ${walk}) END AS n`,
        )
        .bind(JSON.stringify(s.params), workspaceId, JSON.stringify(objects)),
    ]);
    const n = (row?.results[0] as { n: number } | undefined)?.n ?? Infinity;
    return n <= SORTED_OBJECTS ? (sql) => `${workspaceWalk(sql, query, false, undefined)} c` : undefined;
  }

  /** The newest change's number of the workspace's tenant (its block of numbers): a walk's start. */
  private async feedPosition(workspaceId: number): Promise<number> {
    const { lo, hi } = idRange(tenantOfId(workspaceId));
    const [row] = await this.read([
      this.db.prepare('SELECT coalesce(max(seq), ?1) AS n FROM changes WHERE seq >= ?1 AND seq < ?2').bind(lo, hi),
    ]);
    return (row?.results[0] as { n: number } | undefined)?.n ?? 0;
  }

  /** How a search walks the workspace's terms (one round trip, when its words need counting). */
  private async plan(workspaceId: number, words: readonly string[]): Promise<SearchPlan> {
    return searchPlan(words, async (statements) => {
      const results = await this.read(
        statements.map(({ sql, params }) => this.db.prepare(sql).bind(JSON.stringify(params), workspaceId)),
      );
      return results.map((result) => (result.results[0] as { n: number } | undefined)?.n ?? 0);
    });
  }

  /**
   * The query's conditions on a candidate `r`; with `since`, also that no change since the walk
   * began moved its place in the walk (see SINCE).
   */
  private where(sql: Sql, query: Query, plan: SearchPlan | undefined, since?: Since): string {
    const conditions = [matching(sql, query, this.seen)];
    if (plan !== undefined) conditions.push(startsWords(sql, plan.distinct));
    if (since !== undefined) conditions.push(unmoved(sql, since));
    return balanced(conditions, 'AND');
  }

  /**
   * The count of the query's matches among the first COUNT_SCAN candidates of a walk (the records
   * holding the search's term, the keys of an `eq` or `in` on an indexed field, the entries of a
   * range on a kept key, or the workspace's records), whatever the page's plan: its rows read are
   * bounded like a page's, two a candidate (its entry and its record). `seen`: the candidates
   * read, one more than COUNT_SCAN when the walk holds more (then the count is a lower bound).
   */
  private countStatement(workspaceId: number, query: Query, plan: SearchPlan | undefined): D1PreparedStatement {
    const sql = new Sql();
    const range = plan === undefined && driverOf(query) === undefined ? rangeOf(query) : undefined;
    const walk =
      range === undefined
        ? idWalk(sql, query, plan, false, undefined, COUNT_SCAN + 1)
        : rangeWalk(sql, query, range, COUNT_SCAN + 1);
    const where = this.where(sql, query, plan);
    const text = `SELECT count(*) AS seen, coalesce(sum(m), 0) AS n
      FROM (SELECT ${where} AS m FROM ${walk} CROSS JOIN records r ON r.id = c.id)`;
    return this.db.prepare(text).bind(JSON.stringify(sql.params), workspaceId);
  }

  /**
   * A walk's page: `text` selects the page's rows (at most limit + 1) from the walk `walk`;
   * `scanned`, asked only when the page is not full, gives the walk's SCAN_BOUND-th candidate
   * (`last`, its position), if it has one: there the walk stopped at its bound. Reading it reads
   * the walk's entries once, never its records. Positions come from `positionOf`.
   */
  private async walkPage<Row extends RecordReadRow>(
    workspaceId: number,
    query: Query,
    plan: SearchPlan | undefined,
    page: { sql: Sql; text: string; limit: number },
    scanned: (() => { sql: Sql; text: string }) | undefined,
    positionOf: (row: Row) => Position,
  ): Promise<{ records: RecordOut[]; positions: Position[]; full: boolean; stopped?: Position; count?: Count }> {
    const statements = [this.db.prepare(page.text).bind(JSON.stringify(page.sql.params), workspaceId, page.limit)];
    if (query.count) statements.push(this.countStatement(workspaceId, query, plan));
    const [rows, counted] = await this.read(statements);
    const results = (rows?.results ?? []) as (Row & { size_cut: number })[];
    const records = recordsOf(results);
    const positions = results.map(positionOf);
    const count = countOf(counted);
    if (results.length >= page.limit) return { records, positions, full: true, ...count };
    // Cut short by the records' size: the page is as full as a page may be.
    const cutAt = positions.at(-1);
    if (results.at(-1)?.size_cut === 1 && cutAt !== undefined)
      return { records, positions, full: false, stopped: cutAt, ...count };
    if (scanned === undefined) return { records, positions, full: false, ...count };
    const walk = scanned();
    const [bound] = await this.read([this.db.prepare(walk.text).bind(JSON.stringify(walk.sql.params), workspaceId)]);
    const last = (bound?.results[0] as { last: string } | undefined)?.last;
    const stopped = last === undefined ? undefined : (JSON.parse(last) as Position);
    return { records, positions, full: false, ...(stopped === undefined ? {} : { stopped }), ...count };
  }

  /**
   * A page in id order: the candidates of an id walk, at most SCAN_BOUND of them. A range of a kept
   * key (without a search or an `eq` to walk) is met in id order by its records, not its entries:
   * a short walk of the workspace first, which a range that many records meet fills; else, when the
   * range holds fewer than NARROW records, its entries, ordered by id; else the whole walk.
   */
  private async idPage(
    workspaceId: number,
    query: Query,
    plan: SearchPlan | undefined,
    after: Position | undefined,
  ): Promise<QueryPage> {
    const everyRecord: IdWalk = (sql, desc, from, bound) => idWalk(sql, query, plan, desc, from, bound);
    const range = plan === undefined && driverOf(query) === undefined ? rangeOf(query) : undefined;
    if (range === undefined) return this.idWalkPage(workspaceId, query, plan, after, everyRecord);
    const probe = await this.idWalkPage(workspaceId, query, plan, after, everyRecord, PROBE(query.limit));
    if (probe.next !== undefined) return probe;
    const rest = { ...query, count: false };
    const entries: IdWalk = (sql, desc, from, bound) => rangeIdWalk(sql, query, range, desc, from, bound);
    const few = await this.fewer(workspaceId, (sql) => rangeWalk(sql, query, range, NARROW));
    const page = await this.idWalkPage(workspaceId, rest, plan, after, few ? entries : everyRecord);
    return probe.count === undefined ? page : { ...page, count: probe.count };
  }

  /** Whether the walk `walk` (bounded at NARROW) holds fewer than NARROW candidates. One round trip. */
  private async fewer(workspaceId: number, walk: (sql: Sql) => string): Promise<boolean> {
    const sql = new Sql();
    const text = `SELECT count(*) AS n FROM ${walk(sql)}`;
    const [counted] = await this.read([this.db.prepare(text).bind(JSON.stringify(sql.params), workspaceId)]);
    return ((counted?.results[0] as { n: number } | undefined)?.n ?? NARROW) < NARROW;
  }

  /**
   * A page of the id walk `walk` after `after`, at most `bound` candidates (the page ends early
   * with a cursor there, unless the bound is a probe's: then the page ends without one).
   */
  private async idWalkPage(
    workspaceId: number,
    query: Query,
    plan: SearchPlan | undefined,
    after: Position | undefined,
    walk: IdWalk,
    probe?: number,
  ): Promise<QueryPage> {
    const desc = query.sort[0]?.direction === 'desc';
    const from = after?.at(-1) as number | undefined;
    const sql = new Sql();
    const candidates = walk(sql, desc, from, probe ?? SCAN_BOUND);
    const where = this.where(sql, query, plan);
    // The walk stays the outer loop, in its order, and the page stops reading at its limit.
    const text = sizedPage(`FROM ${candidates} CROSS JOIN records r ON r.id = c.id WHERE ${where}`);
    const page = await this.walkPage<RecordReadRow>(
      workspaceId,
      query,
      plan,
      { sql, text, limit: query.limit + 1 },
      probe === undefined ? scannedOf(walk, desc, from) : undefined,
      (row) => [row.id],
    );
    return finish(page, query.limit);
  }

  /**
   * A search without a sort: by relevance, then id. Each tier of relevance (best first) walks the
   * records holding its term in id order; a page goes on to the next tier when one ends. Positions
   * are `[tier, id]` (`[tier, 0]`: the tier's start).
   */
  private async relevancePage(
    workspaceId: number,
    query: Query,
    plan: SearchPlan,
    after: Position | undefined,
    since: Since | undefined,
  ): Promise<QueryPage> {
    let { tier, id: from } = relevanceAt(after);
    const records: RecordOut[] = [];
    const positions: Position[] = [];
    let count: Count | undefined;
    for (;;) {
      const driver = plan.tiers[tier];
      if (driver !== undefined) {
        const sql = new Sql();
        const walk = termWalk(sql, driver, false, from, SCAN_BOUND);
        const where = this.where(sql, query, plan, since);
        const text = sizedPage(`FROM ${walk} c CROSS JOIN records r ON r.id = c.id
          WHERE ${where} AND ${tierSql(sql, tier, plan, driver)}`);
        const need = query.limit + 1 - records.length;
        const at = tier;
        const page = await this.walkPage<RecordReadRow>(
          workspaceId,
          count === undefined ? query : { ...query, count: false },
          plan,
          { sql, text, limit: need },
          () => {
            const scan = new Sql();
            const bounded = termWalk(scan, driver, false, from, SCAN_BOUND);
            return { sql: scan, text: `SELECT json_array(${at}, id) AS last FROM ${bounded} ${AT_BOUND('id')}` };
          },
          (row) => [at, row.id],
        );
        count ??= page.count;
        records.push(...page.records);
        positions.push(...page.positions);
        if (page.full)
          return {
            records: records.slice(0, query.limit),
            positions: positions.slice(0, query.limit),
            next: positions[query.limit - 1],
            ...(count === undefined ? {} : { count }),
          };
        // The walk stopped at its bound: the next page goes on from where it stopped.
        if (page.stopped !== undefined)
          return { records, positions, next: page.stopped, ...(count === undefined ? {} : { count }) };
      }
      if (tier === RELEVANCE_TIERS - 1)
        return { records, positions, next: undefined, ...(count === undefined ? {} : { count }) };
      tier += 1;
      from = undefined;
    }
  }

  /**
   * A page sorted by one key the workspace keeps (creation or update time, name, an indexed
   * field), ties by id in the same direction: the key's entries in order, then (an indexed field)
   * the records without a value in id order, in the same page when the values end. Positions are
   * `[value, id]` (`value` null: among the records without one) or `[walk]` at the start of a walk.
   */
  private async keyedPage(
    workspaceId: number,
    query: Query,
    plan: SearchPlan | undefined,
    key: SortKeyOf,
    desc: boolean,
    after: Position | undefined,
    since: Since | undefined,
  ): Promise<QueryPage> {
    let walk: 'values' | 'missing' =
      after === undefined
        ? 'values'
        : after.length === 1
          ? (after[0] as 'values' | 'missing')
          : after[0] === null
            ? 'missing'
            : 'values';
    let from = after !== undefined && after.length === 2 ? after : undefined;
    const records: RecordOut[] = [];
    const positions: Position[] = [];
    let count: Count | undefined;
    for (;;) {
      const page = await this.keyedWalk(
        workspaceId,
        count === undefined ? query : { ...query, count: false },
        plan,
        { key, desc, walk, from, since },
        query.limit + 1 - records.length,
      );
      count ??= page.count;
      records.push(...page.records);
      positions.push(...page.positions);
      const counted = count === undefined ? {} : { count };
      if (page.full)
        return {
          records: records.slice(0, query.limit),
          positions: positions.slice(0, query.limit),
          next: positions[query.limit - 1],
          ...counted,
        };
      if (page.stopped !== undefined) return { records, positions, next: page.stopped, ...counted };
      // The values walk ended: the records without a value follow (a field's only, unless the
      // filter bounds its values: then no record without one matches).
      const bounded = boundsOf(new Sql(), query, key).length > 0;
      if (walk === 'missing' || !key.field || bounded) return { records, positions, next: undefined, ...counted };
      walk = 'missing';
      from = undefined;
    }
  }

  /** One walk of a keyed page: the key's values, or the records without one, up to `limit` rows. */
  private keyedWalk(
    workspaceId: number,
    query: Query,
    plan: SearchPlan | undefined,
    at: {
      key: SortKeyOf;
      desc: boolean;
      walk: 'values' | 'missing';
      from: Position | undefined;
      since: Since | undefined;
    },
    limit: number,
  ): ReturnType<Queries['walkPage']> {
    const { key, desc, walk, from, since } = at;
    const source = (sql: Sql): string => {
      if (walk === 'missing') {
        const past = from === undefined ? '' : `AND rw.record_id ${desc ? '<' : '>'} ${sql.param(from[1])}`;
        // By the record's own index row (its primary key): the workspace's keys are kept by value.
        return `(SELECT rw.record_id AS id, NULL AS v FROM record_workspaces rw WHERE rw.workspace_id = ?2 ${past}
          AND NOT EXISTS (SELECT 1 FROM ${key.reference === true ? 'record_refs' : 'record_index'} x
            WHERE x.record_id = rw.record_id AND x.field = ${sql.param(key.name.slice(2))}
            ${key.reference === true ? '' : 'AND x.value IS NOT NULL'})
          ORDER BY rw.record_id ${desc ? 'DESC' : ''} LIMIT ${SCAN_BOUND})`;
      }
      const dir = desc ? 'DESC' : '';
      const after = desc ? '<' : '>';
      // Only the entries between the filter's bounds of the key: a rare range is met at once. Past
      // a position, the bounds on its side are implied by it (SQLite would start the walk at them),
      // and within the one value of an `eq` the position is the id.
      const behind: Bounding[] = desc ? ['lt', 'lte'] : ['gt', 'gte'];
      const one = boundsOf(new Sql(), query, key, ['eq']).length > 0;
      const ahead = one ? ['eq' as const] : BOUNDS.filter((op) => from === undefined || !behind.includes(op));
      const bounds = boundsOf(sql, query, key, ahead).map((b) => `AND ${b}`);
      const past =
        from === undefined
          ? ''
          : one
            ? `AND record_id ${after} ${sql.param(from[1])}`
            : `AND (value, record_id) ${after} (${sql.param(from[0])}, ${sql.param(from[1])})`;
      return `(SELECT record_id AS id, value AS v FROM record_sort
        WHERE workspace_id = ?2 AND key = ${sql.param(key.name)} ${bounds.join(' ')}
        ${past} ORDER BY value ${dir}, record_id ${dir} LIMIT ${SCAN_BOUND})`;
    };
    const sql = new Sql();
    const walked = source(sql);
    const where = this.where(sql, query, plan, since);
    // CROSS JOIN keeps the walk as the outer loop: rows come in its order and the page stops
    // reading at its limit.
    const text = sizedPage(`FROM ${walked} c CROSS JOIN records r ON r.id = c.id WHERE ${where}`, [
      ['c.v', 'sort_value'],
    ]);
    return this.walkPage<RecordReadRow & { sort_value: string | number | null }>(
      workspaceId,
      query,
      plan,
      { sql, text, limit },
      () => {
        const scan = new Sql();
        const dir = desc ? 'DESC' : '';
        return {
          sql: scan,
          text: `SELECT json_array(c.v, c.id) AS last FROM ${source(scan)} c ${AT_BOUND(`c.v ${dir}, c.id ${dir}`)}`,
        };
      },
      (row) => [row.sort_value, row.id],
    );
  }

  /**
   * Other sorts (or a search few records match): SQL orders the candidates (the workspace's
   * records, or the search's) by the sort keys, keyset on their values and id.
   */
  private async sortedPage(
    workspaceId: number,
    query: Query,
    plan: SearchPlan | undefined,
    after: Position | undefined,
    since: Since | undefined,
    few?: (sql: Sql) => string,
  ): Promise<QueryPage> {
    const sql = new Sql();
    const keys = query.sort.map((key) => {
      const value = valueOf(sql, key.field);
      const last = missing(key.direction === 'desc');
      return { value: key.field.kind === 'value' ? `coalesce(${value}, ${last})` : value, raw: value, key };
    });
    let keyset = '1';
    if (after !== undefined) {
      const at = keys.map(({ key }, i) => {
        const p = sql.param(after[i] ?? null);
        return key.field.kind === 'value' ? `coalesce(${p}, ${missing(key.direction === 'desc')})` : p;
      });
      keyset = keys
        .map(({ value, key }, i) => {
          const equal = keys.slice(0, i).map((k, j) => `${k.value} = ${at[j]}`);
          return `(${[...equal, `${value} ${key.direction === 'desc' ? '<' : '>'} ${at[i]}`].join(' AND ')})`;
        })
        .join(' OR ');
    }
    const candidates =
      few !== undefined
        ? few(sql)
        : plan === undefined
          ? `${workspaceWalk(sql, query, false, undefined)} c`
          : `${termWalk(sql, plan.all, false, undefined, -1)} c`;
    const where = this.where(sql, query, plan, since);
    const text = sizedPage(
      `FROM ${candidates} JOIN records r ON r.id = c.id
      WHERE ${where} AND (${keyset})
      ORDER BY ${keys.map((k) => `${k.value} ${k.key.direction === 'desc' ? 'DESC' : 'ASC'}`).join(', ')}`,
      [[`json_array(${keys.map((k) => k.raw).join(', ')})`, 'position']],
    );
    const statements = [this.db.prepare(text).bind(JSON.stringify(sql.params), workspaceId, query.limit + 1)];
    if (query.count) statements.push(this.countStatement(workspaceId, query, plan));
    const [rows, counted] = await this.read(statements);
    const results = (rows?.results ?? []) as (RecordReadRow & { position: string; size_cut: number })[];
    const records = recordsOf(results);
    const positions = results.map((row) => JSON.parse(row.position) as Position);
    // Full, or cut short by the records' size: the next page starts after the last one kept.
    const next =
      results.length > query.limit
        ? positions[query.limit - 1]
        : results.at(-1)?.size_cut === 1
          ? positions.at(-1)
          : undefined;
    return {
      records: records.slice(0, query.limit),
      positions: positions.slice(0, query.limit),
      next,
      ...countOf(counted),
    };
  }

  private read(statements: D1PreparedStatement[]): Promise<D1Result<unknown>[]> {
    return retrying(() => this.meter.d1(() => this.db.batch<unknown>(statements)));
  }
}

type Count = { value: number; exact: boolean };

/** A key of `record_sort`: its name, whether it is a field's, and whether that field is a reference (record_refs). */
type SortKeyOf = { name: string; field: boolean; reference?: boolean };

/** The key of `record_sort` a sort by `field` walks, if the workspace keeps one. */
function keyOf(field: FieldRef | undefined): SortKeyOf | undefined {
  if (field === undefined) return undefined;
  if (field.kind === 'system') {
    const name = SORT_KEYS[field.name];
    return name === undefined ? undefined : { name, field: false };
  }
  if (!field.ready) return undefined;
  return field.type === 'reference'
    ? { name: `f:${field.name}`, field: true, reference: true }
    : { name: `f:${field.name}`, field: true };
}

/** In a walk in the order `order`, its SCAN_BOUND-th candidate (none when the walk is shorter). */
const AT_BOUND = (order: string): string => `ORDER BY ${order} LIMIT 1 OFFSET ${SCAN_BOUND - 1}`;

/** An id walk (`… c`, ids in order) after `from`, at most `bound` candidates. */
type IdWalk = (sql: Sql, desc: boolean, from: number | undefined, bound: number) => string;

/** The statement that says where an id walk stopped at its bound, if it did: its SCAN_BOUND-th id. */
function scannedOf(walk: IdWalk, desc: boolean, from: number | undefined): () => { sql: Sql; text: string } {
  return () => {
    const sql = new Sql();
    const text = `SELECT json_array(c.id) AS last FROM ${walk(sql, desc, from, SCAN_BOUND)}
      ${AT_BOUND(`c.id ${desc ? 'DESC' : ''}`)}`;
    return { sql, text };
  };
}

/** A page of at most `limit` records from a walk's page of up to limit + 1. */
function finish(
  page: { records: RecordOut[]; positions: Position[]; full: boolean; stopped?: Position; count?: Count },
  limit: number,
): QueryPage {
  const count = page.count === undefined ? {} : { count: page.count };
  if (page.full)
    return {
      records: page.records.slice(0, limit),
      positions: page.positions.slice(0, limit),
      next: page.positions[limit - 1],
      ...count,
    };
  return { records: page.records, positions: page.positions, next: page.stopped, ...count };
}

function countOf(result: D1Result<unknown> | undefined): { count?: Count } {
  if (result === undefined) return {};
  const { n, seen } = (result.results[0] as { n: number; seen: number } | undefined) ?? { n: 0, seen: 0 };
  // Every candidate read: every match counted. Past COUNT_SCAN, the matches among those read.
  return { count: { value: n, exact: seen <= COUNT_SCAN } };
}

/**
 * A page whose count is never below the matches it shows: a lower bound read from the start of
 * another walk (the count's) may have met none of them, and is raised to them.
 */
function countingShown(page: QueryPage): QueryPage {
  const { count, records } = page;
  if (count === undefined || count.exact || count.value >= records.length) return page;
  return { ...page, count: { value: records.length, exact: false } };
}

/** SQL: record `r` is one the caller's role lets them see. */
function seenBy(sql: Sql, { all, own, userId }: RowsSeen): string {
  return `(r.object_id IN (SELECT value FROM ${sql.list(all)})
    OR (r.owned_by = ${sql.param(userId)} AND r.object_id IN (SELECT value FROM ${sql.list(own)})))`;
}
