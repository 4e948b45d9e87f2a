import { pointer, type InputProblem } from '../core/problem.ts';
import type { ObjectDef } from './definition.ts';
import { valueType } from './field-types.ts';
import type { FieldType } from './object-def.ts';
import { catalogOf, isObject, parseQuery, type FieldRef, type Query } from './query.ts';

/**
 * An aggregate of one object's records in a workspace, as plain data: the records a filter keeps,
 * grouped by up to two fields (a date by an interval, UTC), each group measured. Checked here
 * against the object's fields as the caller may see them: a field it hides is as one it lacks.
 */

export type Interval = 'day' | 'week' | 'month' | 'quarter' | 'year';
const INTERVALS: readonly Interval[] = ['day', 'week', 'month', 'quarter', 'year'];
export type MeasureOp = 'count' | 'sum' | 'avg' | 'min' | 'max';
const OPS: readonly MeasureOp[] = ['count', 'sum', 'avg', 'min', 'max'];

export interface GroupBy {
  /** The field as the request named it: the key of the group's value in `key`. */
  name: string;
  field: FieldRef;
  interval?: Interval;
  /** Each element its own group (the options of a multiSelect, the ids of a reference of several). */
  each: boolean;
  /** The groups one record falls in at most: its elements' (a blank one: one). */
  fanOut: number;
  /** A unique field's: a group a record. */
  unique: boolean;
}

export interface Measure {
  op: MeasureOp;
  field?: FieldRef;
}

export interface Aggregate {
  objectId: number;
  /** The filter, with the object it requires: a query's conditions. */
  query: Query;
  groups: GroupBy[];
  measures: Measure[];
  limit: number;
  cursor?: string;
  /** What a cursor is bound to: everything but the limit and the cursor, as sent. */
  scope: unknown;
  /** The body has a filter: not every record of the object is aggregated. */
  filtered: boolean;
}

/** A group as read: its key's values in the groups' order, its measures' values in theirs. */
export interface GroupRow {
  key: unknown[];
  values: (number | string | null)[];
}

export const MAX_GROUPS = 2;
export const MAX_MEASURES = 10;
export const DEFAULT_GROUPS = 100;
export const MAX_GROUPS_PAGE = 1000;

const KEYS = new Set(['objectId', 'filter', 'groupBy', 'measures', 'limit', 'cursor']);
/** System fields a group may be by. */
const GROUP_SYSTEM: Record<string, FieldType> = {
  createdAt: 'datetime',
  updatedAt: 'datetime',
  createdBy: 'integer',
  ownedBy: 'integer',
};
const GROUPABLE = new Set<FieldType>(['select', 'multiSelect', 'boolean', 'text', 'email', 'integer', 'reference']);
const DATES = new Set<FieldType>(['date', 'datetime']);
const NUMBERS = new Set<FieldType>(['number', 'integer']);

/**
 * The aggregate a body asks for, against `def` as the caller sees it (`def` undefined: the object
 * is not in view): the aggregate, or every problem with its pointer.
 */
export function parseAggregate(
  input: unknown,
  def: ObjectDef | undefined,
  building: ReadonlyMap<number, readonly string[]> = new Map(),
): { ok: true; value: Aggregate } | { ok: false; problems: InputProblem[] } {
  const problems: InputProblem[] = [];
  const add = (at: string, code: string, message: string, status?: number): void => {
    problems.push({ pointer: at, code, message, ...(status === undefined ? {} : { status }) });
  };
  if (!isObject(input))
    return { ok: false, problems: [{ pointer: '', code: 'invalid_type', message: 'expected an object' }] };
  for (const key of Object.keys(input))
    if (!KEYS.has(key)) add(pointer('', key), 'unknown_property', 'unknown property');
  const { objectId } = input;
  if (!Number.isSafeInteger(objectId) || (objectId as number) < 1)
    add('/objectId', objectId === undefined ? 'required' : 'invalid_type', 'expected the id of an object');
  else if (def === undefined) add('/objectId', 'unknown_object', 'no object of this id in the workspace');

  const catalog = catalogOf(def === undefined ? [] : [def], building);
  const filter = parseQuery(input.filter === undefined ? {} : { filter: input.filter }, catalog);
  if (!filter.ok) problems.push(...filter.problems);
  const fieldOf = (
    name: unknown,
    at: string,
  ): { field: FieldRef; type: FieldType; fanOut: number; unique: boolean } | undefined => {
    if (name === undefined) return void add(at, 'required', 'expected a field name');
    if (typeof name !== 'string') return void add(at, 'invalid_type', 'expected string');
    if (Object.hasOwn(GROUP_SYSTEM, name))
      return {
        field: { kind: 'system', name: name as 'createdAt', type: 'integer' },
        type: GROUP_SYSTEM[name] as FieldType,
        fanOut: 1,
        unique: false,
      };
    const known = def?.fields.find((f) => f.name === name);
    if (known === undefined) return void add(at, 'unknown_field', 'no field of this name in the object');
    const type = valueType(known);
    const multiple = known.type === 'reference' && known.multiple === true;
    const entry = catalog.get(name);
    const ready = entry !== undefined && entry !== 'conflict' && entry.ready;
    // A rollup is read from its index row, record by record: the kept totals hold none.
    const rollup = known.type === 'rollup';
    const indexed = entry !== undefined && entry !== 'conflict' && entry.indexed && !rollup;
    // A record of a multiSelect is in a group per option it holds; of several ids, one per id (at most 100).
    const fanOut = known.type === 'multiSelect' ? (known.options?.length ?? 1) : multiple ? 100 : 1;
    const field: FieldRef = {
      kind: 'value',
      name,
      type,
      indexed,
      ready,
      ...(multiple ? { multiple } : {}),
      ...(rollup && def !== undefined ? { rollupOf: [def.id] } : {}),
    };
    return { field, type, fanOut, unique: known.unique === true };
  };

  const groups: GroupBy[] = [];
  const groupBy = input.groupBy === undefined ? [] : input.groupBy;
  if (!Array.isArray(groupBy)) add('/groupBy', 'invalid_type', 'expected an array');
  else {
    if (groupBy.length > MAX_GROUPS) add('/groupBy', 'too_many', `expected at most ${MAX_GROUPS} groups`);
    groupBy.slice(0, MAX_GROUPS).forEach((item: unknown, i) => {
      const at = pointer('', 'groupBy', i);
      if (!isObject(item)) return add(at, 'invalid_type', 'expected an object');
      for (const key of Object.keys(item))
        if (key !== 'field' && key !== 'interval') add(pointer(at, key), 'unknown_property', 'unknown property');
      const found = fieldOf(item.field, pointer(at, 'field'));
      if (found === undefined) return;
      const { field, type, fanOut, unique } = found;
      const name = item.field as string;
      if (groups.some((g) => g.name === name)) add(pointer(at, 'field'), 'duplicate', 'grouped by twice');
      if (item.interval !== undefined) {
        if (!INTERVALS.includes(item.interval as Interval))
          return add(pointer(at, 'interval'), 'invalid_value', `expected one of ${INTERVALS.join(', ')}`);
        if (!DATES.has(type))
          return add(pointer(at, 'interval'), 'not_a_date', 'an interval groups a date or a date-time field', 422);
        return void groups.push({ name, field, interval: item.interval as Interval, each: false, fanOut: 1, unique });
      }
      if (type === 'datetime')
        return add(pointer(at, 'interval'), 'required', 'a date-time field is grouped by an interval');
      if (!GROUPABLE.has(type) && type !== 'date')
        return add(pointer(at, 'field'), 'not_groupable', `a ${type} field cannot be grouped by`, 422);
      const each = type === 'multiSelect' || (field.kind === 'value' && field.multiple === true);
      groups.push({ name, field, each, fanOut: each ? fanOut : 1, unique });
    });
  }

  const measures: Measure[] = [];
  const asked = input.measures;
  if (!Array.isArray(asked) || asked.length === 0)
    add('/measures', asked === undefined ? 'required' : 'invalid_type', 'expected an array of 1 to 10 measures');
  else {
    if (asked.length > MAX_MEASURES) add('/measures', 'too_many', `expected at most ${MAX_MEASURES} measures`);
    asked.slice(0, MAX_MEASURES).forEach((item: unknown, i) => {
      const at = pointer('', 'measures', i);
      if (!isObject(item)) return add(at, 'invalid_type', 'expected an object');
      for (const key of Object.keys(item))
        if (key !== 'op' && key !== 'field') add(pointer(at, key), 'unknown_property', 'unknown property');
      const op = item.op as MeasureOp;
      if (!OPS.includes(op)) return add(pointer(at, 'op'), 'invalid_value', `expected one of ${OPS.join(', ')}`);
      if (op === 'count') {
        if (item.field !== undefined) add(pointer(at, 'field'), 'unknown_property', 'a count takes no field');
        return void measures.push({ op });
      }
      const found = fieldOf(item.field, pointer(at, 'field'));
      if (found === undefined) return;
      // Of the record's own fields, its times alone are measured (their least and greatest), never its users' ids.
      const people = found.field.kind === 'system' && !DATES.has(found.type);
      const fits = !people && (NUMBERS.has(found.type) || ((op === 'min' || op === 'max') && DATES.has(found.type)));
      if (!fits)
        return add(
          pointer(at, 'field'),
          'not_measurable',
          op === 'min' || op === 'max' ? 'expected a number or a date field' : 'expected a number field',
          422,
        );
      measures.push({ op, field: found.field });
    });
  }

  const limit = input.limit === undefined ? DEFAULT_GROUPS : input.limit;
  if (!Number.isSafeInteger(limit) || (limit as number) < 1 || (limit as number) > MAX_GROUPS_PAGE)
    add('/limit', 'out_of_range', `expected an integer from 1 to ${MAX_GROUPS_PAGE}`);
  if (input.cursor !== undefined && typeof input.cursor !== 'string') add('/cursor', 'invalid_type', 'expected string');
  if (problems.length > 0 || !filter.ok) return { ok: false, problems };

  const objectFilter = {
    field: { kind: 'system', name: 'objectId', type: 'integer' },
    op: 'eq',
    value: objectId,
  } as const;
  const own = filter.value.filter;
  const query: Query = {
    ...filter.value,
    filter: own === undefined ? objectFilter : { and: [objectFilter, own] },
  };
  const { limit: _limit, cursor, ...scope } = input;
  return {
    ok: true,
    value: {
      objectId: objectId as number,
      query,
      groups,
      measures,
      limit: limit as number,
      ...(typeof cursor === 'string' ? { cursor } : {}),
      scope,
      filtered: own !== undefined,
    },
  };
}
