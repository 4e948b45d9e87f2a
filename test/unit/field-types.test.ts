import { describe, expect, it } from 'vitest';
import type { FieldDef, FieldType } from '../../src/domain/definition.ts';
import { checkValue } from '../../src/domain/field-types.ts';

const field = (type: FieldType, options?: string[]): FieldDef => ({ name: 'f', type, ...(options ? { options } : {}) });

const cases: Record<
  FieldType,
  { accepts: unknown[]; rejects: [unknown, 'invalid_type' | 'invalid_value'][]; options?: string[] }
> = {
  text: {
    accepts: ['', 'hello', 'x'.repeat(100_000), '😀'.repeat(100_000)],
    rejects: [
      [1, 'invalid_type'],
      [['a'], 'invalid_type'],
      ['x'.repeat(100_001), 'invalid_value'],
    ],
  },
  number: {
    accepts: [0, -1.5, 1e300],
    rejects: [
      ['1', 'invalid_type'],
      [true, 'invalid_type'],
      [Number.NaN, 'invalid_type'],
      [Infinity, 'invalid_type'],
    ],
  },
  integer: {
    accepts: [0, -5, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER],
    rejects: [
      [1.5, 'invalid_type'],
      ['1', 'invalid_type'],
      [2 ** 53, 'invalid_type'],
    ],
  },
  boolean: {
    accepts: [true, false],
    rejects: [
      [0, 'invalid_type'],
      ['true', 'invalid_type'],
    ],
  },
  date: {
    accepts: ['2024-02-29', '0001-01-01', '9999-12-31'],
    rejects: [
      ['2023-02-29', 'invalid_value'],
      ['2024-13-01', 'invalid_value'],
      ['2024-1-01', 'invalid_value'],
      ['2024-01-01T00:00:00Z', 'invalid_value'],
      [20240101, 'invalid_type'],
    ],
  },
  datetime: {
    accepts: [
      '2026-11-22T10:00:00Z',
      '2026-11-22t10:00:00.123+05:30',
      '2016-12-31T23:59:60Z',
      '2026-11-22T10:00:00-00:00',
    ],
    rejects: [
      ['2026-11-22T10:00:00', 'invalid_value'],
      ['2026-11-22 10:00:00Z', 'invalid_value'],
      ['2026-02-30T10:00:00Z', 'invalid_value'],
      ['2026-11-22T24:00:00Z', 'invalid_value'],
      ['2026-11-22T10:00:00+24:00', 'invalid_value'],
      [0, 'invalid_type'],
    ],
  },
  select: {
    options: ['a', 'b'],
    accepts: ['a', 'b'],
    rejects: [
      ['c', 'invalid_value'],
      [['a'], 'invalid_type'],
    ],
  },
  multiSelect: {
    options: ['a', 'b'],
    accepts: [[], ['a'], ['b', 'a']],
    rejects: [
      ['a', 'invalid_type'],
      [[1], 'invalid_type'],
      [['a', 'a'], 'invalid_value'],
      [['c'], 'invalid_value'],
    ],
  },
  email: {
    accepts: ['a@b', 'first.last+tag@example.co.uk'],
    rejects: [
      ['no-at', 'invalid_value'],
      ['a@@b', 'invalid_value'],
      ['a b@c', 'invalid_value'],
      ['a@b.', 'invalid_value'],
      [`${'x'.repeat(250)}@b.co`, 'invalid_value'],
      [5, 'invalid_type'],
    ],
  },
  url: {
    accepts: ['https://example.com', 'http://localhost:8787/x?y=1#z'],
    rejects: [
      ['ftp://example.com', 'invalid_value'],
      ['/relative', 'invalid_value'],
      ['https://', 'invalid_value'],
      ['javascript:alert(1)', 'invalid_value'],
      [{}, 'invalid_type'],
    ],
  },
  json: { accepts: [0, 'x', [1, { a: null }], { nested: { deep: true } }, false], rejects: [] },
  reference: {
    accepts: [0, 1, Number.MAX_SAFE_INTEGER],
    rejects: [
      [-1, 'invalid_type'],
      [1.5, 'invalid_type'],
      ['1', 'invalid_type'],
      [[1], 'invalid_type'],
    ],
  },
  file: {
    accepts: [[{ id: 1, name: 'a.pdf', size: 3, contentType: 'application/pdf' }]],
    rejects: [
      [1, 'invalid_type'],
      [[1], 'invalid_type'],
      [[{ id: 1, name: 'a.pdf', size: 3 }], 'invalid_type'],
      [[{ id: 1, name: 'a.pdf', size: 3, contentType: 'x', sha256: 'y' }], 'invalid_type'],
      [[], 'invalid_value'],
      [
        [
          { id: 1, name: 'a', size: 3, contentType: 'x' },
          { id: 2, name: 'b', size: 3, contentType: 'x' },
        ],
        'invalid_value',
      ],
    ],
  },
  // A lookup holds none of its own.
  lookup: { accepts: [], rejects: [['x', 'invalid_value']] },
  // Nor does a rollup: what it shows is kept from other records.
  rollup: { accepts: [], rejects: [[3, 'invalid_value']] },
  // A formula's values are those of its result type (text here: the field names none).
  formula: {
    accepts: ['computed', ''],
    rejects: [
      [1, 'invalid_type'],
      ['x'.repeat(100_001), 'invalid_value'],
    ],
  },
};

describe('checkValue: a file field with multiple', () => {
  const many: FieldDef = { name: 'f', type: 'file', multiple: true };
  const file = (id: number): unknown => ({ id, name: `f${id}.txt`, size: 1, contentType: 'text/plain' });
  it('holds 1 to 20 distinct files', () => {
    expect(
      checkValue(
        many,
        Array.from({ length: 20 }, (_, i) => file(i + 1)),
      ),
    ).toBeUndefined();
    expect(
      checkValue(
        many,
        Array.from({ length: 21 }, (_, i) => file(i + 1)),
      ),
    ).toEqual({
      code: 'invalid_value',
      message: 'expected 1 to 20 files',
    });
    expect(checkValue(many, [file(1), file(1)])?.message).toBe('expected distinct files');
  });
});

describe('checkValue: a reference with multiple', () => {
  const many: FieldDef = { name: 'f', type: 'reference', target: 1, multiple: true };
  it('accepts 1 to 100 distinct ids in any order and refuses the rest', () => {
    for (const value of [[1], [3, 1, 2], Array.from({ length: 100 }, (_, i) => i)])
      expect(checkValue(many, value)).toBeUndefined();
    expect(checkValue(many, 1)?.code).toBe('invalid_type');
    expect(checkValue(many, ['1'])?.code).toBe('invalid_type');
    expect(checkValue(many, [1, -2])?.code).toBe('invalid_type');
    expect(checkValue(many, [])).toEqual({ code: 'invalid_value', message: 'expected 1 to 100 record ids' });
    expect(
      checkValue(
        many,
        Array.from({ length: 101 }, (_, i) => i),
      )?.code,
    ).toBe('invalid_value');
    expect(checkValue(many, [4, 4])).toEqual({ code: 'invalid_value', message: 'expected distinct record ids' });
  });
});

describe('checkValue: every field type', () => {
  for (const [type, { accepts, rejects, options }] of Object.entries(cases) as [
    FieldType,
    (typeof cases)[FieldType],
  ][]) {
    it(`${type} accepts its values and rejects others with the right code`, () => {
      for (const value of accepts)
        expect(checkValue(field(type, options), value), JSON.stringify(value)?.slice(0, 40)).toBeUndefined();
      for (const [value, code] of rejects)
        expect(checkValue(field(type, options), value)?.code, String(value).slice(0, 40)).toBe(code);
    });
  }
});
