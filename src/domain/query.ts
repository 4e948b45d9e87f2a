import { searchKey, searchWords } from '../core/fold.ts';
import { characters } from '../core/characters.ts';
import { pointer, type InputProblem } from '../core/problem.ts';
import { FIELD_NAME } from '../schemas/common.ts';
import { INDEXABLE, isIndexed } from './definition.ts';
import { isDate, isDateTime, isEmail, isHttpUrl, valueType } from './field-types.ts';
import type { FieldType, ObjectDef } from './object-def.ts';

/**
 * The query of `POST /workspaces/{id}/records/query`, checked without storage: its shape, then
 * every condition against the types of the fields it names. Each problem is listed with its
 * pointer into the body. What comes out is a typed tree that storage turns into SQL.
 */

export const OPS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'nin', 'contains', 'startsWith', 'exists'] as const;
export type Op = (typeof OPS)[number];

export const MAX_DEPTH = 10;
export const MAX_CONDITIONS = 50;
export const MAX_IN = 100;
export const MAX_SEARCH = 200;
export const MAX_SORT = 3;
export const MAX_LIMIT = 100;
/**
 * A field as a condition or sort reads it: a column of the record, or a field value. `indexed`:
 * every object in view marks it indexed (it may be sorted by); `ready`: its index is also built
 * for every record, so a plan may read the index instead of the records' values.
 */
export type FieldRef =
  | { kind: 'system'; name: SystemField; type: FieldType }
  | {
      kind: 'value';
      name: string;
      type: FieldType;
      indexed: boolean;
      ready: boolean;
      multiple?: boolean;
      /** The objects whose field of this name is a rollup: there its value is its index row's, not the record's. */
      rollupOf?: number[];
    };

export type Expr = { and: Expr[] } | { or: Expr[] } | { not: Expr } | { field: FieldRef; op: Op; value?: unknown };

export interface SortKey {
  field: FieldRef;
  direction: 'asc' | 'desc';
}

export interface Query {
  filter?: Expr;
  /** True when the filter names `deleted`; otherwise only live records match. */
  namesDeleted: boolean;
  search?: string;
  /** Ordered by how well names match the search (see RELEVANCE), then id: a search sent without a sort. */
  relevance: boolean;
  /** The keys, ending with `id` (the tie-break) unless it came earlier. */
  sort: SortKey[];
  fields?: string[];
  /** Reference fields whose records each item shows in `expanded`. */
  expand?: string[];
  limit: number;
  cursor?: string;
  count: boolean;
  /** What a cursor is bound to: the filter, search and sort as sent. */
  scope: unknown;
}

export const SYSTEM_FIELDS = {
  id: 'integer',
  objectId: 'integer',
  name: 'text',
  createdAt: 'integer',
  updatedAt: 'integer',
  createdBy: 'integer',
  updatedBy: 'integer',
  ownedBy: 'integer',
  deleted: 'boolean',
  isTemplate: 'boolean',
} as const satisfies Record<string, FieldType>;
export type SystemField = keyof typeof SYSTEM_FIELDS;

const isSystem = (name: string): name is SystemField => Object.hasOwn(SYSTEM_FIELDS, name);

/** System fields a query may sort by (besides indexed fields). */
const SORTABLE_SYSTEM = new Set<SystemField>([
  'id',
  'objectId',
  'name',
  'createdAt',
  'updatedAt',
  'createdBy',
  'updatedBy',
]);

const ORDERED = new Set<FieldType>(['number', 'integer', 'date', 'datetime', 'text']);
/** Every scalar type compares by equality: the types an index keeps. */
const EQUATABLE = INDEXABLE;

/**
 * Which operators a field of `type` takes (`system` for the record's own properties). A reference
 * compares by id; one that holds several ids matches `eq`, `contains` and `in` when it holds any of
 * the ids named, and `ne`, `nin` when it holds none of them.
 */
export function opsFor(type: FieldType, system: SystemField | undefined, multiple = false): readonly Op[] {
  const ops: Op[] = ['exists'];
  if (EQUATABLE.has(type) || type === 'reference') ops.push('eq', 'ne', 'in', 'nin');
  if (multiple) ops.push('contains');
  if (ORDERED.has(type)) ops.push('lt', 'lte', 'gt', 'gte');
  if ((type === 'text' && system === undefined) || type === 'multiSelect' || system === 'name') ops.push('contains');
  if ((type === 'text' && system === undefined) || type === 'email' || type === 'url' || system === 'name')
    ops.push('startsWith');
  return ops;
}

/** The fields of the objects in view: one type per name, or `conflict` when objects disagree. */
export type Catalog = Map<
  string,
  { type: FieldType; indexed: boolean; ready: boolean; multiple?: boolean; rollupOf?: number[] } | 'conflict'
>;

/**
 * The catalog of `defs`. `building` holds, per object id, the indexed fields whose index is still
 * being built for the records written before the field was indexed.
 */
export function catalogOf(
  defs: readonly ObjectDef[],
  building: ReadonlyMap<number, readonly string[]> = new Map(),
): Catalog {
  const catalog: Catalog = new Map();
  for (const def of defs) {
    for (const field of def.fields) {
      const known = catalog.get(field.name);
      const indexed = isIndexed(field);
      const ready = indexed && !(building.get(def.id) ?? []).includes(field.name);
      const multiple = field.type === 'reference' ? field.multiple === true : undefined;
      // A formula is queried as the type of what it yields.
      const type = valueType(field);
      const rollupOf = field.type === 'rollup' ? [def.id] : [];
      if (known === undefined)
        catalog.set(field.name, {
          type,
          indexed,
          ready,
          ...(multiple === undefined ? {} : { multiple }),
          ...(rollupOf.length === 0 ? {} : { rollupOf }),
        });
      else if (known === 'conflict' || known.type !== type || known.multiple !== multiple)
        catalog.set(field.name, 'conflict');
      else {
        known.indexed &&= indexed;
        known.ready &&= ready;
        if (rollupOf.length > 0) known.rollupOf = [...(known.rollupOf ?? []), ...rollupOf];
      }
    }
  }
  return catalog;
}

type Parsed<T> = { ok: true; value: T } | { ok: false; problems: InputProblem[] };

const KEYS = new Set(['filter', 'search', 'sort', 'fields', 'limit', 'cursor', 'count', 'expand']);
export const isObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

/** Checks a query body against the fields in view; every problem at once. */
export function parseQuery(input: unknown, catalog: Catalog): Parsed<Query> {
  const problems: InputProblem[] = [];
  const add = (at: string, code: string, message: string): void => {
    problems.push({ pointer: at, code, message });
  };
  if (!isObject(input))
    return { ok: false, problems: [{ pointer: '', code: 'invalid_type', message: 'expected an object' }] };
  for (const key of Object.keys(input))
    if (!KEYS.has(key)) add(pointer('', key), 'unknown_property', 'unknown property');

  // A lookup is read from another record when a page is answered: no SQL can compare it.
  const notFilterable = (at: string): void =>
    void problems.push({
      pointer: at,
      code: 'not_filterable',
      message: 'a lookup is read from the record it references: it can be neither filtered nor sorted',
      status: 422,
    });
  const resolve = (name: unknown, at: string): FieldRef | undefined => {
    if (typeof name !== 'string') return void add(at, 'invalid_type', 'expected string');
    if (isSystem(name)) return { kind: 'system', name, type: SYSTEM_FIELDS[name] };
    if (!FIELD_NAME.test(name)) return void add(at, 'unknown_field', 'no such field');
    const known = catalog.get(name);
    if (known === undefined) return void add(at, 'unknown_field', 'no field of this name in the objects in view');
    if (known === 'conflict')
      return void add(at, 'ambiguous_field', 'objects in view define this field with different types');
    const { type, indexed, ready, multiple, rollupOf } = known;
    return {
      kind: 'value',
      name,
      type,
      indexed,
      ready,
      ...(multiple === true ? { multiple } : {}),
      ...(rollupOf === undefined ? {} : { rollupOf }),
    };
  };

  let conditions = 0;
  let namesDeleted = false;
  const expr = (node: unknown, at: string, depth: number): Expr | undefined => {
    if (depth > MAX_DEPTH) return void add(at, 'too_deep', `expected at most ${MAX_DEPTH} levels`);
    if (!isObject(node)) return void add(at, 'invalid_type', 'expected an object');
    const keys = Object.keys(node);
    const group = keys.length === 1 && (keys[0] === 'and' || keys[0] === 'or') ? keys[0] : undefined;
    if (group !== undefined) {
      const list = node[group];
      if (!Array.isArray(list) || list.length === 0)
        return void add(pointer(at, group), 'invalid_type', 'expected a non-empty array');
      const items = list.map((item, i) => expr(item, pointer(at, group, i), depth + 1));
      return items.every((item) => item !== undefined)
        ? ({ [group]: items } as { and: Expr[] } | { or: Expr[] })
        : undefined;
    }
    if (keys.length === 1 && keys[0] === 'not') {
      const inner = expr(node.not, pointer(at, 'not'), depth + 1);
      return inner === undefined ? undefined : { not: inner };
    }
    for (const key of keys)
      if (!['field', 'op', 'value'].includes(key)) add(pointer(at, key), 'unknown_property', 'unknown property');
    if (!('field' in node) && !('op' in node))
      return void add(at, 'invalid_type', 'expected and, or, not or a condition');
    conditions += 1;
    if (conditions === MAX_CONDITIONS + 1) add(at, 'too_many', `expected at most ${MAX_CONDITIONS} conditions`);
    const field = resolve(node.field, pointer(at, 'field'));
    if (field?.type === 'lookup') return void notFilterable(pointer(at, 'field'));
    if (field?.name === 'deleted') namesDeleted = true;
    const op = node.op;
    if (!OPS.includes(op as Op))
      return void add(pointer(at, 'op'), 'invalid_value', `expected one of ${OPS.join(', ')}`);
    if (field === undefined) return undefined;
    const system = field.kind === 'system' ? field.name : undefined;
    if (!opsFor(field.type, system, field.kind === 'value' && field.multiple === true).includes(op as Op)) {
      return void add(pointer(at, 'op'), 'invalid_operator', `${String(op)} does not apply to a ${field.type} field`);
    }
    const problem = valueProblem(field, op as Op, node.value);
    if (problem !== undefined)
      return void add(
        problem.at ? pointer(at, 'value', ...problem.at) : pointer(at, 'value'),
        problem.code,
        problem.message,
      );
    return { field, op: op as Op, ...('value' in node ? { value: node.value } : {}) };
  };

  const filter = input.filter === undefined ? undefined : expr(input.filter, '/filter', 1);

  let search: string | undefined;
  if (input.search !== undefined) {
    if (typeof input.search !== 'string') add('/search', 'invalid_type', 'expected string');
    else if (characters(input.search) > MAX_SEARCH)
      add('/search', 'invalid_length', `expected at most ${MAX_SEARCH} characters`);
    else search = input.search;
  }

  const sort: SortKey[] = [];
  if (input.sort !== undefined) {
    if (!Array.isArray(input.sort)) add('/sort', 'invalid_type', 'expected an array');
    else if (input.sort.length > MAX_SORT) add('/sort', 'invalid_length', `expected at most ${MAX_SORT} keys`);
    else
      input.sort.forEach((key: unknown, i) => {
        const at = pointer('', 'sort', i);
        if (!isObject(key)) return add(at, 'invalid_type', 'expected an object');
        for (const k of Object.keys(key))
          if (k !== 'field' && k !== 'direction') add(pointer(at, k), 'unknown_property', 'unknown property');
        const direction = key.direction ?? 'asc';
        if (direction !== 'asc' && direction !== 'desc')
          add(pointer(at, 'direction'), 'invalid_value', 'expected asc or desc');
        const field = resolve(key.field, pointer(at, 'field'));
        if (field === undefined) return;
        if (field.type === 'lookup') return notFilterable(pointer(at, 'field'));
        const sortable =
          field.kind === 'system' ? SORTABLE_SYSTEM.has(field.name) : field.indexed && field.multiple !== true;
        if (!sortable)
          return add(
            pointer(at, 'field'),
            'not_sortable',
            'sort by id, a system field or an indexed field (not a reference of several ids)',
          );
        if (sort.some((s) => s.field.name === field.name))
          return add(pointer(at, 'field'), 'duplicate', 'sorted by twice');
        sort.push({ field, direction: direction === 'desc' ? 'desc' : 'asc' });
      });
  }
  // A search without a sort is answered by relevance, then id.
  const relevance = search !== undefined && searchWords(search).length > 0 && input.sort === undefined;
  // Ties are broken by id, in the direction of the first key (so a walk of a key reads it in
  // the order it is kept).
  if (!sort.some((key) => key.field.name === 'id'))
    sort.push({ field: { kind: 'system', name: 'id', type: 'integer' }, direction: sort[0]?.direction ?? 'asc' });

  let fields: string[] | undefined;
  if (input.fields !== undefined) {
    if (!Array.isArray(input.fields) || input.fields.length > 200)
      add('/fields', 'invalid_type', 'expected an array of at most 200 field names');
    else {
      fields = [];
      input.fields.forEach((name: unknown, i) => {
        const at = pointer('', 'fields', i);
        if (typeof name !== 'string') return add(at, 'invalid_type', 'expected string');
        if (!catalog.has(name)) return add(at, 'unknown_field', 'no field of this name in the objects in view');
        fields?.push(name);
      });
    }
  }

  let expand: string[] | undefined;
  if (input.expand !== undefined) {
    if (!Array.isArray(input.expand) || input.expand.length > 200)
      add('/expand', 'invalid_type', 'expected an array of at most 200 field names');
    else {
      expand = [];
      input.expand.forEach((name: unknown, i) => {
        const at = pointer('', 'expand', i);
        if (typeof name !== 'string') return add(at, 'invalid_type', 'expected string');
        const known = catalog.get(name);
        if (known === undefined) return add(at, 'unknown_field', 'no field of this name in the objects in view');
        if (known === 'conflict' || known.type !== 'reference')
          return add(at, 'not_a_reference', `${name} is not a reference field`);
        if (expand?.includes(name)) return add(at, 'duplicate', 'field named more than once');
        expand?.push(name);
      });
    }
  }

  let limit = 50;
  if (input.limit !== undefined) {
    if (!Number.isSafeInteger(input.limit) || (input.limit as number) < 1 || (input.limit as number) > MAX_LIMIT)
      add('/limit', 'out_of_range', `expected an integer from 1 to ${MAX_LIMIT}`);
    else limit = input.limit as number;
  }
  if (input.cursor !== undefined && typeof input.cursor !== 'string') add('/cursor', 'invalid_type', 'expected string');
  if (input.count !== undefined && typeof input.count !== 'boolean') add('/count', 'invalid_type', 'expected boolean');

  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: {
      ...(filter === undefined ? {} : { filter }),
      namesDeleted,
      ...(search === undefined ? {} : { search }),
      relevance,
      sort,
      ...(fields === undefined ? {} : { fields }),
      ...(expand === undefined ? {} : { expand }),
      limit,
      ...(typeof input.cursor === 'string' ? { cursor: input.cursor } : {}),
      count: input.count === true,
      scope: { filter: input.filter ?? null, search: search ?? null, sort: input.sort ?? null },
    },
  };
}

interface ValueProblem {
  at?: (string | number)[];
  code: string;
  message: string;
}

/** Whether `value` fits the operator on a field of `field.type`. */
function valueProblem(field: FieldRef, op: Op, value: unknown): ValueProblem | undefined {
  if (op === 'exists')
    return typeof value === 'boolean' ? undefined : { code: 'invalid_type', message: 'expected true or false' };
  if (value === undefined) return { code: 'required', message: 'value is required' };
  if (op === 'in' || op === 'nin') {
    if (!Array.isArray(value) || value.length === 0 || value.length > MAX_IN)
      return { code: 'invalid_type', message: `expected an array of 1 to ${MAX_IN} values` };
    for (const [i, item] of value.entries()) {
      const problem = scalarProblem(field, item);
      if (problem !== undefined) return { at: [i], code: 'invalid_type', message: problem };
    }
    return undefined;
  }
  if ((op === 'contains' || op === 'startsWith') && field.type !== 'reference') {
    if (typeof value !== 'string') return { code: 'invalid_type', message: 'expected string' };
    return value === '' ? { code: 'invalid_value', message: 'expected a non-empty string' } : undefined;
  }
  const problem = scalarProblem(field, value);
  return problem === undefined ? undefined : { code: 'invalid_type', message: problem };
}

function scalarProblem(field: FieldRef, value: unknown): string | undefined {
  switch (field.type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'expected number';
    case 'integer':
      if (field.kind === 'system')
        return Number.isSafeInteger(value) && (value as number) >= 0 ? undefined : 'expected a non-negative integer';
      return Number.isSafeInteger(value) ? undefined : 'expected integer';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'expected boolean';
    case 'date':
      return typeof value === 'string' && isDate(value) ? undefined : 'expected a calendar date YYYY-MM-DD';
    case 'datetime':
      return typeof value === 'string' && isDateTime(value) ? undefined : 'expected an RFC 3339 date-time with offset';
    case 'email':
      return typeof value === 'string' && isEmail(value) ? undefined : 'expected an email address';
    case 'url':
      return typeof value === 'string' && isHttpUrl(value) ? undefined : 'expected an absolute http or https URL';
    case 'reference':
      return Number.isSafeInteger(value) && (value as number) >= 0 ? undefined : 'expected a record id';
    default:
      return typeof value === 'string' ? undefined : 'expected string';
  }
}

/** A record's field values limited to `fields` (all of them without a projection). */
export function project<T extends { fieldValues: { fieldName: string }[] }>(record: T, fields?: readonly string[]): T {
  if (fields === undefined) return record;
  return { ...record, fieldValues: record.fieldValues.filter((value) => fields.includes(value.fieldName)) };
}

export { searchKey, searchWords };

/**
 * How well a name matches a search, best first: 0 the name's words are the search's words; 1 each
 * search word is a whole word of the name; 2 each search word starts a word of the name (every
 * match is at least that); undefined: no match.
 */
export const RELEVANCE_TIERS = 3;

export function relevanceOf(name: string, words: readonly string[]): number | undefined {
  const own = searchKey(name).split(' ');
  // Not a match: some word of the search starts no word of the name.
  if (!words.every((word) => own.some((candidate) => candidate.startsWith(word)))) return undefined;
  // The whole name: its runs of letters and digits are the search's words.
  if (searchWords(name).join(' ') === words.join(' ')) return 0;
  if (words.every((word) => own.includes(word))) return 1;
  return 2;
}

/** The value fields a query names anywhere: its filter, its sort, its `fields` and `expand`. */
export function namedFields(query: Query): Set<string> {
  const names = new Set<string>([...(query.fields ?? []), ...(query.expand ?? [])]);
  const walk = (expr: Expr): void => {
    if ('and' in expr) expr.and.forEach(walk);
    else if ('or' in expr) expr.or.forEach(walk);
    else if ('not' in expr) walk(expr.not);
    else if (expr.field.kind === 'value') names.add(expr.field.name);
  };
  if (query.filter !== undefined) walk(query.filter);
  for (const key of query.sort) if (key.field.kind === 'value') names.add(key.field.name);
  return names;
}
