import { foldCase } from '../core/fold.ts';
import type { Expr, FieldRef, SystemField } from '../domain/query.ts';
import { NAME_FOLD } from '../domain/record-keys.ts';
import { datetimeKey } from './record-index.ts';

/**
 * The SQL of a query's conditions on a record `r`: values travel in one JSON array bound to `?1`
 * (read with `?1 ->> '$[k]'`), so no statement nears D1's bound parameter limit and a field name
 * is only ever a value.
 */

export const COLUMNS: Record<SystemField, string> = {
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
export const missing = (desc: boolean): string => (desc ? '-9e999' : "x''");

export class Sql {
  readonly params: unknown[] = [];
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

/** How every entry of a record's `field_values` begins, as the Worker writes it (JSON.stringify). */
const ENTRY = '{"fieldName":';

/**
 * The field `name`'s value in the record `r`, read from the record's own row: no row beyond the
 * record's, however many values it holds (json_each would read a row per value, for each
 * condition). The Worker writes each entry as `{"fieldName":"<name>","value":…}`, so the entry's
 * text is found by instr() and its index is the number of entries that begin before it; the entry
 * at that index must name the field (a `json` value holding such text could mislead the count).
 * Only when it does not, or the array is not in that form, are the entries read one by one.
 */
function located(sql: Sql, name: string, numbers = false): string {
  const n = sql.param(name);
  const entry = sql.param(`${ENTRY}${JSON.stringify(name)},"value":`);
  // Kept short: a filter may name 50 fields, and D1 takes 100 KB of SQL a statement.
  const v = 'r.field_values';
  const index = `(p-1-length(replace(substr(${v},1,p-1),'${ENTRY}','')))/${ENTRY.length}`;
  const written = `(${v}='[]' OR substr(${v},1,${ENTRY.length + 2})='[${ENTRY}"')`;
  // Numbers only: a JSON number (->> reads a JSON true as 1).
  const pick = (e: string): string =>
    numbers
      ? `CASE WHEN json_type(${e},'$.value') IN ('integer','real') THEN ${e}->>'$.value' END`
      : `${e}->>'$.value'`;
  const oneByOne = `(SELECT ${pick('f.value')} FROM json_each(${v}) f WHERE f.value->>'$.fieldName'=${n})`;
  return `(SELECT CASE WHEN e->>'$.fieldName'=${n} THEN ${pick('e')} WHEN p=0 AND ${written} THEN NULL
    ELSE ${oneByOne} END FROM (SELECT p,${v}->('$['||(${index})||']') AS e FROM (SELECT instr(${v},${entry}) AS p)))`;
}

/**
 * A number field's value in the record `r` when it holds a JSON number, else NULL (a boolean or a
 * text kept from before the field's type changed is no number).
 */
export function numberOf(sql: Sql, field: FieldRef): string {
  if (field.kind === 'system' || field.rollupOf !== undefined) return valueOf(sql, field);
  return located(sql, field.name, true);
}

/**
 * A field's value in the record `r`, as the index compares it: read from the record's own row (a
 * condition costs no row beyond the record's), a date-time as epoch milliseconds.
 */
export function valueOf(sql: Sql, field: FieldRef): string {
  if (field.kind === 'system') return COLUMNS[field.name];
  const raw = located(sql, field.name);
  // A rollup is kept in its index row (the record's own primary key), never in its values; another
  // object may hold a number field of the same name in its values.
  if (field.rollupOf !== undefined)
    return `(CASE WHEN r.object_id IN (SELECT value FROM ${sql.list(field.rollupOf)})
      THEN (SELECT value FROM record_index WHERE record_id = r.id AND field = ${sql.param(field.name)})
      ELSE ${raw} END)`;
  // The key's expression names its value three times: the value is found once.
  return field.type === 'datetime' ? `(SELECT ${datetimeKey('d')} FROM (SELECT ${raw} AS d))` : raw;
}

/** A value sent for a field, as the field's SQL value compares with it. */
export function operand(sql: Sql, field: FieldRef, value: unknown): string {
  const p = sql.param(value);
  return field.type === 'datetime' ? datetimeKey(p) : p;
}

/**
 * A value of several (a multiSelect's options, a reference's ids) as JSON `json_each` can read:
 * a value of another form (kept from before its field's type changed) is an empty array.
 */
export const elementsOf = (value: string): string =>
  `(SELECT CASE WHEN json_valid(v) AND json_type(v) = 'array' THEN v ELSE '[]' END FROM (SELECT ${value} AS v))`;

const COMPARE = { eq: '=', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;

/**
 * Terms joined by `op`, in parentheses, as a balanced tree: D1 refuses an expression more than 100
 * deep, and `a AND b AND …` is as deep as it is long (100 search words, 50 conditions).
 */
export function balanced(terms: readonly string[], op: 'AND' | 'OR'): string {
  if (terms.length === 0) return op === 'AND' ? '1' : '0';
  if (terms.length <= 2) return `(${terms.join(` ${op} `)})`;
  const half = Math.ceil(terms.length / 2);
  return `(${balanced(terms.slice(0, half), op)} ${op} ${balanced(terms.slice(half), op)})`;
}

/** A condition or a tree of them, as an SQL expression that is 0 or 1 (never NULL). */
export function compile(sql: Sql, expr: Expr): string {
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
  // A value of several (the options of a multiSelect, the ids of a reference): its elements.
  if (op === 'contains' && field.type === 'multiSelect')
    return `EXISTS (SELECT 1 FROM json_each(${elementsOf(valueOf(sql, field))}) o WHERE o.value = ${sql.param(value)})`;
  if (field.kind === 'value' && field.multiple === true && op !== 'exists') {
    // A reference of several ids: does it hold any of the ids named?
    const ids = op === 'in' || op === 'nin' ? `SELECT value FROM ${sql.list(value as unknown[])}` : sql.param(value);
    const holds = `EXISTS (SELECT 1 FROM json_each(${elementsOf(valueOf(sql, field))}) o WHERE o.value IN (${ids}))`;
    return op === 'ne' || op === 'nin' ? `(NOT ${holds})` : holds;
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
      // Case-insensitive: the value sent is folded here, and the record's value is the fold the
      // Worker stored with it, or lower() where that folds alike (ASCII).
      const path = sql.param(field.kind === 'system' ? `$."${NAME_FOLD}"` : `$.${field.name}`);
      const folded = sql.param(foldCase(String(value)));
      return `coalesce(instr(coalesce(r.folds ->> ${path}, lower(${v})), ${folded}) > 0, 0)`;
    }
    case 'startsWith': {
      const p = sql.param(value);
      return `coalesce(substr(${v}, 1, length(${p})) = ${p}, 0)`;
    }
    default:
      return `coalesce(${v} ${COMPARE[op]} ${operand(sql, field, value)}, 0)`;
  }
}

/** A record's name as search compares it (a record written before keys were kept: its name in lower case). */
export const NAME_KEY = 'coalesce(r.name_key, lower(r.name))';

/** Each search word starts a word of the name. */
export function startsWords(sql: Sql, words: readonly string[]): string {
  return balanced(
    words.map((word) => `instr(' ' || ${NAME_KEY}, ' ' || ${sql.param(word)}) > 0`),
    'AND',
  );
}

/** Each search word is a whole word of the name. */
export function wholeWords(sql: Sql, words: readonly string[]): string {
  return balanced(
    words.map((word) => `instr(' ' || ${NAME_KEY} || ' ', ' ' || ${sql.param(word)} || ' ') > 0`),
    'AND',
  );
}
