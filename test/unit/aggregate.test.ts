import { describe, expect, it } from 'vitest';
import { parseAggregate } from '../../src/domain/aggregate.ts';
import type { ObjectDef } from '../../src/domain/definition.ts';

const deal = {
  id: 7,
  version: 1,
  name: 'Deal',
  workspaceIds: [1],
  fields: [
    { name: 'stage', type: 'select', options: ['a', 'b'] },
    { name: 'amount', type: 'number' },
    { name: 'closed', type: 'date' },
    { name: 'title', type: 'text' },
    { name: 'ceo', type: 'lookup', reference: 'x', field: 'y' },
  ],
} as unknown as ObjectDef;

const codes = (result: ReturnType<typeof parseAggregate>) =>
  result.ok ? [] : result.problems.map((p) => [p.pointer, p.code, p.status ?? 400]);

describe('parseAggregate', () => {
  it('requires the object in every filter and keeps the groups and measures in order', () => {
    const parsed = parseAggregate(
      {
        objectId: 7,
        filter: { field: 'amount', op: 'gt', value: 1 },
        groupBy: [{ field: 'closed', interval: 'quarter' }, { field: 'stage' }],
        measures: [{ op: 'count' }, { op: 'max', field: 'closed' }],
      },
      deal,
    );
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    expect(parsed.value.query.filter).toMatchObject({ and: [{ field: { name: 'objectId' }, value: 7 }, {}] });
    expect(parsed.value.groups.map((g) => [g.name, g.interval, g.each])).toEqual([
      ['closed', 'quarter', false],
      ['stage', undefined, false],
    ]);
    expect(parsed.value.measures.map((m) => [m.op, m.field?.name])).toEqual([
      ['count', undefined],
      ['max', 'closed'],
    ]);
    expect(parsed.value.limit).toBe(100);
  });

  it('lists every problem: unknown fields, misfit types, a lookup, an object not in view', () => {
    expect(
      codes(
        parseAggregate(
          { objectId: 7, groupBy: [{ field: 'ceo' }], measures: [{ op: 'sum', field: 'title' }], limit: 0 },
          deal,
        ),
      ),
    ).toEqual([
      ['/groupBy/0/field', 'not_groupable', 422],
      ['/measures/0/field', 'not_measurable', 422],
      ['/limit', 'out_of_range', 400],
    ]);
    expect(codes(parseAggregate({ objectId: 8, measures: [{ op: 'count' }] }, undefined))).toEqual([
      ['/objectId', 'unknown_object', 400],
    ]);
    expect(codes(parseAggregate([], deal))).toEqual([['', 'invalid_type', 400]]);
  });
});
