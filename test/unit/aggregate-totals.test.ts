import { describe, expect, it } from 'vitest';
import { parseAggregate } from '../../src/domain/aggregate.ts';
import { keptGroups, keptPlan, type TotalsRow } from '../../src/domain/aggregate-totals.ts';
import type { ObjectDef } from '../../src/domain/definition.ts';

const deal = {
  id: 7,
  version: 1,
  name: 'Deal',
  workspaceIds: [1],
  fields: [
    { name: 'stage', type: 'select', options: ['a', 'b'], indexed: true },
    { name: 'tags', type: 'multiSelect', options: ['a', 'b'], indexed: true },
    { name: 'amount', type: 'number', indexed: true },
    { name: 'qty', type: 'integer', indexed: true },
    { name: 'loose', type: 'number' },
    { name: 'code', type: 'text', unique: true },
    { name: 'closed', type: 'date', indexed: true },
    { name: 'at', type: 'datetime', indexed: true },
    { name: 'note', type: 'text' },
    { name: 'double', type: 'formula', expression: 'qty * 2', resultType: 'number', indexed: true },
  ],
} as unknown as ObjectDef;

const plan = (body: Record<string, unknown>, building: string[] = []) => {
  const parsed = parseAggregate({ objectId: 7, ...body }, deal, new Map([[7, building]]));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return keptPlan(parsed.value);
};
const count = { op: 'count' };

describe('keptPlan', () => {
  it('answers from totals an unfiltered aggregate by one indexed field, counting and adding indexed numbers', () => {
    expect(plan({ measures: [count] })).toEqual({ measures: [{ op: 'count' }] });
    expect(
      plan({
        groupBy: [{ field: 'stage' }],
        measures: [count, { op: 'sum', field: 'amount' }, { op: 'avg', field: 'qty' }, { op: 'sum', field: 'double' }],
      }),
    ).toEqual({
      field: 'stage',
      measures: [
        { op: 'count' },
        { op: 'sum', field: 'amount' },
        { op: 'avg', field: 'qty' },
        { op: 'sum', field: 'double' },
      ],
    });
    for (const field of ['qty', 'closed']) expect(plan({ groupBy: [{ field }], measures: [count] })?.field).toBe(field);
  });

  it('leaves to reading the records what the totals do not hold', () => {
    const by = (groupBy: unknown[], measures: unknown[] = [count]) => plan({ groupBy, measures });
    expect(plan({ filter: { field: 'qty', op: 'gt', value: 1 }, measures: [count] })).toBeUndefined();
    expect(by([{ field: 'stage' }, { field: 'qty' }])).toBeUndefined();
    expect(by([{ field: 'note' }])).toBeUndefined(); // not indexed
    expect(by([{ field: 'code' }])).toBeUndefined(); // unique: a group a record
    expect(by([{ field: 'tags' }])).toBeUndefined(); // each option its group
    expect(by([{ field: 'at', interval: 'month' }])).toBeUndefined();
    expect(by([{ field: 'createdBy' }])).toBeUndefined();
    expect(by([], [{ op: 'min', field: 'amount' }])).toBeUndefined();
    expect(by([], [{ op: 'sum', field: 'loose' }])).toBeUndefined(); // not indexed
    expect(plan({ groupBy: [{ field: 'stage' }], measures: [count] }, ['stage'])).toBeUndefined(); // still building
  });
});

const row = (value: unknown, records: number, counts = {}, sums = {}): TotalsRow => ({ value, records, counts, sums });

describe('keptGroups', () => {
  const measures = [
    { op: 'count' as const },
    { op: 'sum' as const, field: 'amount' },
    { op: 'avg' as const, field: 'amount' },
  ];
  it('adds the group of blanks: what the object holds beyond the groups', () => {
    const object = row('', 10, { amount: 8 }, { amount: 100 });
    const groups = [row('a', 4, { amount: 4 }, { amount: 40 }), row('b', 3, { amount: 1 }, { amount: 20 })];
    expect(keptGroups({ field: 'stage', measures }, object, groups)).toEqual([
      { key: ['a'], values: [4, 40, 10] },
      { key: ['b'], values: [3, 20, 20] },
      { key: [null], values: [3, 40, 40 / 3] },
    ]);
  });

  it('answers a sum and an average of no number as null, and no group of blanks when every record is grouped', () => {
    const object = row('', 2, { amount: 0 }, { amount: 0 });
    expect(keptGroups({ field: 'stage', measures }, object, [row('a', 2)])).toEqual([
      { key: ['a'], values: [2, null, null] },
    ]);
  });

  it('answers one group with no group asked, a count of 0 for an object with no record', () => {
    expect(keptGroups({ measures }, undefined, [])).toEqual([{ key: [], values: [0, null, null] }]);
    expect(keptGroups({ field: 'stage', measures }, undefined, [])).toEqual([]);
  });
});
