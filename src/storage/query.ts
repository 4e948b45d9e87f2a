import { FOLD_LAYER, foldCase, pairsInto, replaceSql } from '../core/case-fold.ts';
import type { Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/object-def.ts';
import {
  RELEVANCE_TIERS,
  searchWords,
  type Expr,
  type FieldRef,
  type Query,
  type SystemField,
} from '../domain/query.ts';
import type { RecordOut } from '../schemas/record.ts';
import type { Meter } from './meter.ts';
import { datetimeKey } from './record-index.ts';
import { retrying } from './retry.ts';
import type { D1 } from './sessions.ts';
import {
  callerOf,
  callerStatement,
  RECORD_COLUMNS,
  recordsOf,
  toObjectDef,
  type ObjectRow,
  type RecordReadRow,
} from './store.ts';

/**
 * The SQL of record queries. A query's values never enter the SQL text: they travel in one JSON
 * array bound to `?1` and are read with `?1 ->> '$[k]'`, so no statement nears D1's bound
 * parameter limit and a field name is only ever a value.
 *
 * Plans. Sorted by `id` alone, a page walks candidates in id order, at most SCAN_BOUND of them:
 * the workspace's records, or, when the filter requires an indexed field to equal a value, the
 * index's entries for that value (rows read grow with the page). Sorted by one indexed field, it
 * walks that field's index entries, then the records without a value, as bounded. A page that
 * reaches the bound ends there with a cursor, so a query never runs long and always progresses.
 * Sorted by other keys, the matching records of the workspace are ordered by SQL (keyset on the
 * sort values and id); such a page reads every record the filter lets through.
 */

/** Candidates a page of an id-ordered query reads at most. */
export const SCAN_BOUND = 5000;
/** A count is exact up to this many records; beyond, a lower bound. */
export const COUNT_BOUND = 10_000;

const COLUMNS: Record<SystemField, string> = {
  id: 'r.id',
  objectId: 'r.object_id',
  name: 'r.name',
  createdAt: 'r.created_at',
  updatedAt: 'r.updated_at',
  createdBy: 'r.created_by',
  updatedBy: 'r.updated_by',
  ownedBy: 'r.owned_by',
  deleted: 'r.deleted',
  isTemplate: 'r.is_template',
};

/**
 * Where a missing value sorts: last either way. Ascending, after every value (SQLite orders any
 * blob after all numbers and texts); descending, before every value (-Infinity).
 */
const missing = (desc: boolean): string => (desc ? '-9e999' : "x''");

/** The objects whose current definition lists the workspace `?`, and their fields' index builds. */
const OBJECTS_IN_VIEW = `SELECT v.object_id AS id, v.version, v.name, v.name_template, v.fields, v.workspace_ids,
    (SELECT json_group_array(b.field) FROM index_builds b WHERE b.object_id = o.id) AS building
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE EXISTS (SELECT 1 FROM json_each(v.workspace_ids) j WHERE j.value = ?)`;

export interface View {
  caller: Caller | undefined;
  objects: ObjectDef[];
  building: Map<number, string[]>;
}

/** A position in a walk: the sort keys' values, then the id. */
export type Position = (string | number | null)[];

export interface QueryPage {
  records: RecordOut[];
  /** Each record's position (a page cut short by its size continues after one). */
  positions: Position[];
  /** Where the next page starts, when there may be one. */
  next: Position | undefined;
  count?: { value: number; exact: boolean };
}

class Sql {
  readonly params: unknown[] = [];
  private readonly steps: string[][] = [];
  /**
   * `expr` (of the record `r`) as a value of its own, computed once per record. The values of one
   * `step` (of every condition) share one join with a one-row table (`json_each` of a one-element
   * array holding them all), listed by `joins` after `records r`: a join per value would pass
   * SQLite's 64 tables in a join with a query of many folding conditions. A value of step `n` may
   * read values of earlier steps only.
   */
  let(expr: string, step: number): string {
    const values = (this.steps[step] ??= []);
    values.push(expr);
    return `(fold_${step + 1}.value ->> '$[${values.length - 1}]')`;
  }
  /** The joins that `let` asked for, to follow `records r` (empty without a folding contains). */
  joins(): string {
    return this.steps
      .map((values, i) => `CROSS JOIN json_each(json_array(json_array(${values.join(',\n')}))) fold_${i + 1}`)
      .join('\n');
  }
  /** The JSON parameter `k`, as an SQL value. */
  param(value: unknown): string {
    this.params.push(value);
    return `(?1 ->> '$[${this.params.length - 1}]')`;
  }
  /** The JSON array parameter `k`, as rows of `value`. */
  list(values: readonly unknown[]): string {
    this.params.push(values);
    return `json_each(?1, '$[${this.params.length - 1}]')`;
  }
}

function valueOf(sql: Sql, field: FieldRef): string {
  if (field.kind === 'system') return COLUMNS[field.name];
  const name = sql.param(field.name);
  if (field.ready) return `(SELECT ri.value FROM record_index ri WHERE ri.record_id = r.id AND ri.field = ${name})`;
  const raw =
    `(SELECT e.value ->> '$.value' FROM json_each(r.field_values) e ` + `WHERE e.value ->> '$.fieldName' = ${name})`;
  return field.type === 'datetime' ? datetimeKey(raw) : raw;
}

/** A value sent for a field, as the field's SQL value compares with it. */
function operand(sql: Sql, field: FieldRef, value: unknown): string {
  const p = sql.param(value);
  return field.type === 'datetime' ? datetimeKey(p) : p;
}

const COMPARE = { eq: '=', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;

/**
 * Terms joined by `op`, in parentheses, as a balanced tree: D1 refuses an expression more than 100
 * deep, and `a AND b AND …` is as deep as it is long (100 search words, 50 conditions).
 */
function balanced(terms: readonly string[], op: 'AND' | 'OR'): string {
  if (terms.length <= 2) return `(${terms.join(` ${op} `)})`;
  const half = Math.ceil(terms.length / 2);
  return `(${balanced(terms.slice(0, half), op)} ${op} ${balanced(terms.slice(half), op)})`;
}

/** A condition or a tree of them, as an SQL expression that is 0 or 1 (never NULL). */
function compile(sql: Sql, expr: Expr): string {
  if ('and' in expr)
    return balanced(
      expr.and.map((e) => compile(sql, e)),
      'AND',
    );
  if ('or' in expr)
    return balanced(
      expr.or.map((e) => compile(sql, e)),
      'OR',
    );
  if ('not' in expr) return `(NOT ${compile(sql, expr.not)})`;
  const { field, op, value } = expr;
  if (op === 'contains' && field.type === 'multiSelect') {
    return `EXISTS (SELECT 1 FROM json_each(r.field_values) e, json_each(e.value, '$.value') o
      WHERE e.value ->> '$.fieldName' = ${sql.param(field.name)} AND o.value = ${sql.param(value)})`;
  }
  const v = valueOf(sql, field);
  switch (op) {
    case 'exists':
      return value === true ? `(${v} IS NOT NULL)` : `(${v} IS NULL)`;
    case 'ne':
      return `(${v} IS NOT ${operand(sql, field, value)})`;
    case 'in':
    case 'nin': {
      const items = sql.list(value as unknown[]);
      const set =
        field.type === 'datetime' ? `SELECT ${datetimeKey('value')} FROM ${items}` : `SELECT value FROM ${items}`;
      return op === 'in' ? `coalesce(${v} IN (${set}), 0)` : `coalesce(${v} NOT IN (${set}), 1)`;
    }
    case 'contains': {
      // Case-insensitive beyond ASCII: the value sent is folded here; the field's value in SQL by
      // the letters the folded value holds (any other folds to a letter it lacks), FOLD_LAYER
      // replace() calls a step, each step a value of its own (D1 refuses an expression deeper
      // than 100). The letters are the fold table's constants, never the text sent.
      const folded = foldCase(String(value));
      const pairs = pairsInto(folded);
      let text = v;
      for (let i = 0; i < pairs.length; i += FOLD_LAYER)
        text = sql.let(replaceSql(text, pairs.slice(i, i + FOLD_LAYER)), i / FOLD_LAYER);
      return `coalesce(instr(lower(${text}), ${sql.param(folded)}) > 0, 0)`;
    }
    case 'startsWith': {
      const p = sql.param(value);
      return `coalesce(substr(${v}, 1, length(${p})) = ${p}, 0)`;
    }
    default:
      return `coalesce(${v} ${COMPARE[op]} ${operand(sql, field, value)}, 0)`;
  }
}

/** An `eq` on an indexed field that every match must meet: the walk can read the index for it. */
function driverOf(filter: Expr | undefined): { field: FieldRef; value: unknown } | undefined {
  const top = filter === undefined ? [] : 'and' in filter ? filter.and : [filter];
  for (const e of top) {
    if ('field' in e && e.op === 'eq' && e.field.kind === 'value' && e.field.ready)
      return { field: e.field, value: e.value };
  }
  return undefined;
}

/**
 * The candidates of a query in id order after `from`, at most `bound` of them: the workspace's
 * records (`?2`), or the index entries of an `eq` on an indexed field every match must meet.
 */
function idWalk(sql: Sql, query: Query, desc: boolean, from: number | undefined, bound?: number): string {
  const driver = driverOf(query.filter);
  const past = from === undefined ? '' : `AND rw.record_id ${desc ? '<' : '>'} ${sql.param(from)}`;
  const order = `ORDER BY rw.record_id ${desc ? 'DESC' : ''} ${bound === undefined ? '' : `LIMIT ${bound}`}`;
  if (driver === undefined)
    return `(SELECT rw.record_id AS id FROM record_workspaces rw WHERE rw.workspace_id = ?2 ${past} ${order}) c`;
  return `(SELECT rw.record_id AS id FROM record_index ri JOIN record_workspaces rw
      ON rw.workspace_id = ?2 AND rw.record_id = ri.record_id
    WHERE ri.field = ${sql.param(driver.field.name)}
      AND ri.value = ${operand(sql, driver.field, driver.value)} ${past.replaceAll('rw.record_id', 'ri.record_id')}
    ${order.replaceAll('rw.record_id', 'ri.record_id')}) c`;
}

/** A record's name as search compares it (a record written before keys were kept: its name in lower case). */
const NAME_KEY = 'coalesce(r.name_key, lower(r.name))';

/** How well the name matches the search's `words` (0 best), as relevanceOf() says. */
function relevanceSql(sql: Sql, words: readonly string[]): string {
  const all = sql.param(words.join(' '));
  const whole = words.map((word) => `instr(' ' || ${NAME_KEY} || ' ', ' ' || ${sql.param(word)} || ' ') > 0`);
  const first = sql.param(words[0] ?? '');
  return `CASE WHEN ${NAME_KEY} = ${all} THEN 0 WHEN ${balanced(whole, 'AND')} THEN 1
    WHEN substr(${NAME_KEY}, 1, length(${first})) = ${first} THEN 2 ELSE 3 END`;
}

export class Queries {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
  ) {}

  /**
   * The caller, the definitions of the objects in view of the workspace, and the fields of those
   * objects whose index is still being built (by object id). One round trip.
   */
  async view(keyHash: string, workspaceId: number): Promise<View> {
    const [caller, objects] = await this.read([
      callerStatement(this.db, keyHash),
      this.db.prepare(OBJECTS_IN_VIEW).bind(workspaceId),
    ]);
    const rows = (objects?.results ?? []) as (ObjectRow & { building: string })[];
    return {
      caller: callerOf(caller),
      objects: rows.map(toObjectDef),
      building: new Map(rows.map((row) => [row.id, JSON.parse(row.building) as string[]])),
    };
  }

  /** One page of the query after `after` (a position this walk issued). */
  async page(workspaceId: number, query: Query, after: Position | undefined): Promise<QueryPage> {
    const [first, second] = query.sort;
    // A relevance walk's positions are `[tier, id]` or `[tier, id, 0]`; a position of one is a search
    // walk's begun in id order (as searches were answered before relevance): it goes on in id order.
    if (query.relevance && after?.length !== 1) return this.relevancePage(workspaceId, query, after);
    if (query.relevance) return this.boundedPage(workspaceId, query, after);
    if (query.sort.length === 1 && first?.field.name === 'id') return this.boundedPage(workspaceId, query, after);
    const byIndexedField = query.sort.length === 2 && first?.field.kind === 'value' && second?.field.name === 'id';
    if (byIndexedField && first.field.kind === 'value' && first.field.ready && second?.direction === 'asc')
      return this.indexedSortPage(workspaceId, query, first.field.name, first.direction === 'desc', after);
    // A walk begun on the index goes on here while the index is rebuilt (the field's type
    // changed): its start of the records without a value is the same place in this order.
    const phase = after?.length === 1 && byIndexedField ? after[0] : undefined;
    if (phase === 'values') return this.sortedPage(workspaceId, query, undefined);
    if (phase === 'missing') return this.sortedPage(workspaceId, query, [null, -1]);
    return this.sortedPage(workspaceId, query, after);
  }

  /**
   * A page sorted by one indexed field (ties by id), read from the index: the records with a value
   * walk the index in value order, then those without one (last, either way) walk the workspace in
   * id order; either walk reads at most SCAN_BOUND entries a page and ends there
   * with a cursor. A page ends where its walk does (the next page starts the other walk).
   * Positions are `[value, id]` (`value` null: among the records without one) or `[phase]` at the
   * start of a walk.
   */
  private async indexedSortPage(
    workspaceId: number,
    query: Query,
    field: string,
    desc: boolean,
    after: Position | undefined,
  ): Promise<QueryPage> {
    const order = ['values', 'missing'];
    const walk: 'values' | 'missing' =
      after === undefined
        ? (order[0] as 'values' | 'missing')
        : after.length === 1
          ? (after[0] as 'values' | 'missing')
          : after[0] === null
            ? 'missing'
            : 'values';
    const from = after !== undefined && after.length === 2 ? after : undefined;
    const sql = new Sql();
    const name = sql.param(field);
    let source: string;
    if (walk === 'missing') {
      const past = from === undefined ? '' : `AND rw.record_id > ${sql.param(from[1])}`;
      source = `(SELECT rw.record_id AS id, NULL AS v FROM record_workspaces rw WHERE rw.workspace_id = ?2 ${past}
        ORDER BY rw.record_id LIMIT ${SCAN_BOUND})`;
    } else {
      let past = '';
      if (from !== undefined) {
        const [v, id] = [sql.param(from[0]), sql.param(from[1])];
        past = `AND (ri.value ${desc ? '<' : '>'} ${v} OR (ri.value = ${v} AND ri.record_id > ${id}))`;
      }
      // A value its field's type cannot order (a text that is no date-time, kept from before the
      // field's type changed) is indexed as NULL: it counts as no value, as read from the records.
      source = `(SELECT ri.record_id AS id, ri.value AS v FROM record_index ri
        WHERE ri.field = ${name} AND ri.value IS NOT NULL ${past}
        ORDER BY ri.value ${desc ? 'DESC' : ''}, ri.record_id LIMIT ${SCAN_BOUND})`;
    }
    const holds =
      walk === 'missing'
        ? `NOT EXISTS (SELECT 1 FROM record_index x WHERE x.record_id = r.id AND x.field = ${name}
            AND x.value IS NOT NULL)`
        : `EXISTS (SELECT 1 FROM record_workspaces w WHERE w.workspace_id = ?2 AND w.record_id = r.id)`;
    const where = this.where(sql, query);
    // CROSS JOIN keeps the walk as the outer loop: rows come in its order and the page stops
    // reading at its limit (an ORDER BY here would read the whole bounded walk to sort it).
    const text = `SELECT ${RECORD_COLUMNS}, c.v AS sort_value FROM ${source} c CROSS JOIN records r ON r.id = c.id
      ${sql.joins()} WHERE ${holds} AND ${where} LIMIT ?3`;
    const args = walk === 'missing' ? [JSON.stringify(sql.params), workspaceId] : [JSON.stringify(sql.params)];
    const statements = [this.db.prepare(text).bind(JSON.stringify(sql.params), workspaceId, query.limit + 1)];
    if (query.count) statements.push(this.countStatement(workspaceId, query));
    const [rows, counted] = await this.read(statements);
    // In the walk's order (see CROSS JOIN above), which the cursors follow.
    const results = (rows?.results ?? []) as (RecordReadRow & { sort_value: string | number | null })[];
    const positions = results.map((row): Position => [row.sort_value, row.id]);
    const records = recordsOf(results).slice(0, query.limit);
    let next: Position | undefined;
    if (results.length > query.limit) next = positions[query.limit - 1];
    else {
      // Fewer than a page: the walk ended, or stopped at its bound (then the next page goes on).
      const scanned = `SELECT (SELECT count(*) FROM ${source} c) AS n,
        (SELECT json_array(c.v, c.id) FROM ${source} c ORDER BY c.v ${desc ? '' : 'DESC'}, c.id DESC LIMIT 1) AS last`;
      // Only the walk of records without a value names the workspace (`?2`).
      const [bound] = await this.read([this.db.prepare(scanned).bind(...args)]);
      const { n, last } = (bound?.results[0] ?? { n: 0, last: null }) as { n: number; last: string | null };
      if (n >= SCAN_BOUND && last !== null) next = JSON.parse(last) as Position;
      else if (walk === order[0]) next = [order[1] as string];
    }
    return { records, positions: positions.slice(0, query.limit), next, ...countOf(counted) };
  }

  private where(sql: Sql, query: Query): string {
    const conditions = [query.namesDeleted ? '1' : 'r.deleted = 0'];
    if (query.filter !== undefined) conditions.push(compile(sql, query.filter));
    const words = searchWords(query.search ?? '');
    // Each word starts a word of the name's search key (words joined by single spaces).
    for (const word of words) conditions.push(`instr(' ' || ${NAME_KEY}, ' ' || ${sql.param(word)}) > 0`);
    return balanced(conditions, 'AND');
  }

  /**
   * The count of the query's matches, up to COUNT_BOUND + 1, whatever the page's plan: the
   * candidates of an id walk without a bound (the index entries of an `eq` on an indexed field, or
   * the workspace's records).
   */
  private countStatement(workspaceId: number, query: Query): D1PreparedStatement {
    const sql = new Sql();
    const from = idWalk(sql, query, false, undefined);
    const where = this.where(sql, query);
    const text = `SELECT count(*) AS n FROM (SELECT 1 FROM ${from} JOIN records r ON r.id = c.id ${sql.joins()}
      WHERE ${where} LIMIT ${COUNT_BOUND + 1})`;
    return this.db.prepare(text).bind(JSON.stringify(sql.params), workspaceId);
  }

  private async boundedPage(workspaceId: number, query: Query, after: Position | undefined): Promise<QueryPage> {
    const desc = query.sort[0]?.direction === 'desc';
    const from = after?.at(-1) as number | undefined;
    const walk = (sql: Sql): string => idWalk(sql, query, desc, from, SCAN_BOUND);
    const sql = new Sql();
    const candidates = walk(sql);
    const where = this.where(sql, query);
    // The walk stays the outer loop, in its order, and the page stops reading at its limit.
    const text = `SELECT ${RECORD_COLUMNS} FROM ${candidates} CROSS JOIN records r ON r.id = c.id ${sql.joins()}
      WHERE ${where} LIMIT ?3`;
    const statements = [this.db.prepare(text).bind(JSON.stringify(sql.params), workspaceId, query.limit + 1)];
    if (query.count) statements.push(this.countStatement(workspaceId, query));
    const [rows, counted] = await this.read(statements);
    const records = recordsOf((rows?.results ?? []) as RecordReadRow[]);
    const count = countOf(counted);
    if (records.length > query.limit) {
      const kept = records.slice(0, query.limit);
      return {
        records: kept,
        positions: kept.map((r) => [r.id]),
        next: [(records[query.limit - 1] as RecordOut).id],
        ...count,
      };
    }
    // Fewer than a page: the walk is done unless the scan stopped at its bound.
    const scan = new Sql();
    const [scanned] = await this.read([
      this.db
        .prepare(`SELECT count(*) AS n, ${desc ? 'min' : 'max'}(c.id) AS last FROM ${walk(scan)}`)
        .bind(JSON.stringify(scan.params), workspaceId),
    ]);
    const { n, last } = (scanned?.results[0] ?? { n: 0, last: null }) as { n: number; last: number | null };
    return {
      records,
      positions: records.map((r) => [r.id]),
      next: n >= SCAN_BOUND && last !== null ? [last] : undefined,
      ...count,
    };
  }

  /**
   * A search without a sort: by relevance, then id. Each tier of relevance (RELEVANCE_TIERS, best
   * first) is an id-ordered walk of the candidates, as a page sorted by id walks them; a page goes on
   * to the next tier when one ends, and all its walks together read at most SCAN_BOUND candidates
   * (then it ends early with a cursor). Positions are `[tier, id, 0]` (`[tier, 0, 0]` at a tier's
   * start): three values, as a walk in one read has two.
   */
  private async relevancePage(workspaceId: number, query: Query, after: Position | undefined): Promise<QueryPage> {
    const words = searchWords(query.search ?? '');
    // A walk that began by tiers goes on by tiers.
    const byTiers = after?.length === 3;
    const whole = byTiers ? undefined : await this.relevanceInOneWalk(workspaceId, query, words, after);
    if (whole !== undefined) return whole;
    let tier = (after?.[0] as number | undefined) ?? 0;
    let from = after === undefined || after[1] === 0 ? undefined : (after[1] as number);
    let budget = SCAN_BOUND;
    const records: RecordOut[] = [];
    const positions: Position[] = [];
    let count: ReturnType<typeof countOf> | undefined;
    for (;;) {
      const sql = new Sql();
      const candidates = idWalk(sql, query, false, from, budget);
      const where = this.where(sql, query);
      const text = `SELECT ${RECORD_COLUMNS} FROM ${candidates} CROSS JOIN records r ON r.id = c.id ${sql.joins()}
        WHERE ${where} AND ${relevanceSql(sql, words)} = ${tier} LIMIT ?3`;
      const walked = new Sql();
      const scanned = `SELECT count(*) AS n, max(c.id) AS last FROM ${idWalk(walked, query, false, from, budget)}`;
      const statements = [
        this.db.prepare(text).bind(JSON.stringify(sql.params), workspaceId, query.limit + 1 - records.length),
        this.db.prepare(scanned).bind(JSON.stringify(walked.params), workspaceId),
      ];
      // The count, with the first read.
      if (query.count && count === undefined) statements.push(this.countStatement(workspaceId, query));
      const [rows, bound, counted] = await this.read(statements);
      if (counted !== undefined) count = countOf(counted);
      for (const record of recordsOf((rows?.results ?? []) as RecordReadRow[])) {
        records.push(record);
        positions.push([tier, record.id, 0]);
      }
      if (records.length > query.limit) {
        return {
          records: records.slice(0, query.limit),
          positions: positions.slice(0, query.limit),
          next: positions[query.limit - 1],
          ...count,
        };
      }
      const { n, last } = (bound?.results[0] ?? { n: 0, last: null }) as { n: number; last: number | null };
      // The walk stopped at the page's bound: the next page goes on from where it stopped.
      if (n >= budget && last !== null) return { records, positions, next: [tier, last, 0], ...count };
      if (tier === RELEVANCE_TIERS - 1) return { records, positions, next: undefined, ...count };
      tier += 1;
      from = undefined;
      budget -= n;
      // The next tier from its start (ids are positive).
      if (budget <= 0) return { records, positions, next: [tier, 0, 0], ...count };
    }
  }

  /**
   * A relevance page when the workspace's candidates all fit in one walk's bound (the usual case):
   * one read takes every match among them, orders them by tier and id and keeps the page after
   * `after`. Undefined when they do not fit: then each tier is a walk of its own.
   */
  private async relevanceInOneWalk(
    workspaceId: number,
    query: Query,
    words: readonly string[],
    after: Position | undefined,
  ): Promise<QueryPage | undefined> {
    const sql = new Sql();
    let keyset = '1';
    if (after !== undefined) {
      const tier = sql.param(after[0]);
      keyset =
        after.length === 2
          ? `(m.tier > ${tier} OR (m.tier = ${tier} AND m.id > ${sql.param(after[1])}))`
          : `m.tier >= ${tier}`;
    }
    // The records' columns are read for the page's rows only, after the matches are ordered; when
    // the walk does not fit, the (constant) count makes SQLite read no candidate at all.
    const where = this.where(sql, query);
    const text = `SELECT ${RECORD_COLUMNS}, m.tier FROM (SELECT r.id, ${relevanceSql(sql, words)} AS tier
        FROM ${idWalk(sql, query, false, undefined, SCAN_BOUND)} CROSS JOIN records r ON r.id = c.id ${sql.joins()}
        WHERE ${where}
          AND (SELECT count(*) FROM ${idWalk(sql, query, false, undefined, SCAN_BOUND)}) < ${SCAN_BOUND}) m
      CROSS JOIN records r ON r.id = m.id
      WHERE ${keyset} ORDER BY m.tier, m.id LIMIT ?3`;
    const walked = new Sql();
    const statements = [
      this.db.prepare(text).bind(JSON.stringify(sql.params), workspaceId, query.limit + 1),
      this.db
        .prepare(`SELECT count(*) AS n FROM ${idWalk(walked, query, false, undefined, SCAN_BOUND)}`)
        .bind(JSON.stringify(walked.params), workspaceId),
    ];
    if (query.count) statements.push(this.countStatement(workspaceId, query));
    const [rows, bound, counted] = await this.read(statements);
    if (((bound?.results[0] as { n: number } | undefined)?.n ?? 0) >= SCAN_BOUND) return undefined;
    const results = (rows?.results ?? []) as (RecordReadRow & { tier: number })[];
    const positions = results.map((row): Position => [row.tier, row.id]);
    return {
      records: recordsOf(results).slice(0, query.limit),
      positions: positions.slice(0, query.limit),
      next: results.length > query.limit ? positions[query.limit - 1] : undefined,
      ...countOf(counted),
    };
  }

  private async sortedPage(workspaceId: number, query: Query, after: Position | undefined): Promise<QueryPage> {
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
    const where = this.where(sql, query);
    const text = `SELECT ${RECORD_COLUMNS}, json_array(${keys.map((k) => k.raw).join(', ')}) AS position
      FROM record_workspaces rw JOIN records r ON r.id = rw.record_id ${sql.joins()}
      WHERE rw.workspace_id = ?2 AND ${where} AND (${keyset})
      ORDER BY ${keys.map((k) => `${k.value} ${k.key.direction === 'desc' ? 'DESC' : 'ASC'}`).join(', ')}
      LIMIT ?3`;
    const statements = [this.db.prepare(text).bind(JSON.stringify(sql.params), workspaceId, query.limit + 1)];
    if (query.count) statements.push(this.countStatement(workspaceId, query));
    const [rows, counted] = await this.read(statements);
    const results = (rows?.results ?? []) as (RecordReadRow & { position: string })[];
    const records = recordsOf(results);
    const last = results[query.limit - 1];
    return {
      records: records.slice(0, query.limit),
      positions: results.slice(0, query.limit).map((row) => JSON.parse(row.position) as Position),
      next: results.length > query.limit && last !== undefined ? (JSON.parse(last.position) as Position) : undefined,
      ...countOf(counted),
    };
  }

  private read(statements: D1PreparedStatement[]): Promise<D1Result<unknown>[]> {
    return retrying(() => this.meter.d1(() => this.db.batch<unknown>(statements)));
  }
}

function countOf(result: D1Result<unknown> | undefined): { count?: { value: number; exact: boolean } } {
  if (result === undefined) return {};
  const n = (result.results[0] as { n: number } | undefined)?.n ?? 0;
  return { count: n > COUNT_BOUND ? { value: COUNT_BOUND, exact: false } : { value: n, exact: true } };
}
