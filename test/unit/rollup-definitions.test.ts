import { describe, expect, it } from 'vitest';
import { lookupNames, readByRollups, rollupProblems, type FieldDef } from '../../src/domain/definition.ts';
import { withRollups } from '../../src/domain/rollups.ts';
import type { ObjectDefinitionIn } from '../../src/schemas/admin.ts';
import type { RecordOut } from '../../src/schemas/record.ts';

/** Rollup definitions and what a record shows of them: pure rules. */

const ORDER = 7;
const orderFields: FieldDef[] = [
  { name: 'account', type: 'reference', target: 3 },
  { name: 'amount', type: 'number' },
  { name: 'total', type: 'formula', expression: 'amount * 2', resultType: 'number' },
  { name: 'note', type: 'text' },
];
const account = (fields: FieldDef[]): ObjectDefinitionIn => ({
  name: 'Account',
  workspaceIds: [1],
  fields: [{ name: 'title', type: 'text' }, ...fields],
});
const rollup = (name: string, extra: Partial<FieldDef>): FieldDef => ({
  name,
  type: 'rollup',
  from: { objectId: ORDER, field: 'account' },
  op: 'sum',
  of: 'amount',
  ...extra,
});
/** A count: it reads no field. */
const count = (name: string): FieldDef => ({
  name,
  type: 'rollup',
  from: { objectId: ORDER, field: 'account' },
  op: 'count',
});

describe('rollup definitions', () => {
  it('summarize a number of records referencing this object by a reference to it', () => {
    const sources = new Map([[ORDER, orderFields]]);
    const fine = account([count('n'), rollup('s', {}), rollup('f', { of: 'total' })]);
    expect(rollupProblems(fine, sources, 3)).toEqual([]);
    const bad = account([
      rollup('a', { from: { objectId: ORDER, field: 'amount' } }),
      rollup('b', { of: 'note' }),
      rollup('c', { from: { objectId: 99, field: 'account' } }),
      rollup('d', { of: 'missing' }),
    ]);
    expect(rollupProblems(bad, sources, 3).map((p) => [p.pointer, p.code, p.status])).toEqual([
      ['/fields/1/from/field', 'invalid_rollup', 422],
      ['/fields/2/of', 'invalid_rollup', 422],
      ['/fields/3/from/objectId', 'unknown_object', 422],
      ['/fields/4/of', 'invalid_rollup', 422],
    ]);
    // A new object: nothing references it yet.
    expect(rollupProblems(fine, sources, undefined).map((p) => p.pointer)).toEqual([
      '/fields/1/from/field',
      '/fields/2/from/field',
      '/fields/3/from/field',
    ]);
  });

  it('take a name no other kind of field ever held', () => {
    const input = account([rollup('s', {})]);
    expect(lookupNames([[{ name: 's', type: 'number' }]], input).map((p) => p.pointer)).toEqual(['/fields/1/type']);
    expect(lookupNames([[rollup('s', { op: 'max' })]], input)).toEqual([]);
  });

  it('keep what they read in the object they read', () => {
    const readers = [{ objectId: 3, name: 's', field: 'account', of: 'amount' }];
    const order = (fields: FieldDef[]): ObjectDefinitionIn => ({ name: 'Order', workspaceIds: [1], fields });
    expect(readByRollups(readers, order(orderFields))).toEqual([]);
    const retyped = order([orderFields[0]!, { name: 'amount', type: 'text' }]);
    expect(readByRollups(readers, retyped).map((p) => [p.pointer, p.code])).toEqual([
      ['/fields/1/type', 'read_by_rollup'],
    ]);
    expect(readByRollups(readers, order([])).map((p) => [p.pointer, p.code])).toEqual([
      ['/fields', 'read_by_rollup'],
      ['/fields', 'read_by_rollup'],
    ]);
  });
});

describe('a record shows its rollups', () => {
  it('in the definition order, as kept (none kept: none shown), never stored values of that name', () => {
    const def = {
      id: 3,
      version: 2,
      name: 'Account',
      workspaceIds: [1],
      fields: [count('n'), { name: 'title', type: 'text' }, rollup('lo', {})] as FieldDef[],
    };
    const record = {
      id: 1,
      objectId: 3,
      fieldValues: [
        { fieldName: 'title', value: 'A' },
        { fieldName: 'lo', value: 'stale' },
      ],
    } as unknown as RecordOut;
    expect(withRollups(record, def, { n: 2, lo: null }).fieldValues).toEqual([
      { fieldName: 'n', value: 2 },
      { fieldName: 'title', value: 'A' },
    ]);
    expect(withRollups(record, { ...def, fields: [def.fields[1]!] }, { n: 2 })).toBe(record);
  });
});
