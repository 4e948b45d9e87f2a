import { describe, expect, it } from 'vitest';
import { computeFormulas } from '../../src/domain/formula-eval.ts';
import { compileFormulas, type Compiled, type FieldLike } from '../../src/domain/formula-language.ts';

/** Attacks on the formula language and its evaluator: cost, depth and odd names. */

const RECORD = { createdAt: 0, updatedAt: 0 };

function compiled(fields: FieldLike[]): Compiled[] {
  const result = compileFormulas(fields);
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.formulas;
}

describe('formula cost', () => {
  it('joins texts past 100,000 characters without counting them at each join: the result is no value', () => {
    // `t&t&…&t`: 999 joins of a 100,000-character text. Only the result is measured in characters
    // (counting at every join made five such formulas cost seconds); a join past any text of
    // 100,000 characters gives up at once. Timed by `npm run bench:core`, not here.
    const expression = Array.from({ length: 1000 }, () => 't').join('&');
    expect(expression.length).toBeLessThanOrEqual(2000);
    const formulas = compiled([
      { name: 't', type: 'text' },
      ...[1, 2, 3, 4, 5].map((i) => ({ name: `f${i}`, type: 'formula', expression, resultType: 'text' })),
    ]);
    const computed = computeFormulas(formulas, new Map([['t', 'a'.repeat(100_000)]]), RECORD);
    for (const i of [1, 2, 3, 4, 5]) {
      const value = computed.get(`f${i}`);
      expect(value === null || (typeof value === 'string' && value.length <= 100_000)).toBe(true);
    }
    const short = computeFormulas(formulas, new Map([['t', 'ab']]), RECORD);
    expect(short.get('f1')).toBe('ab'.repeat(1000));
  });
});

describe('formula shape', () => {
  it('evaluates the longest chain of operators 2,000 characters allow without overflowing the stack', () => {
    const fields: FieldLike[] = [
      { name: 'a', type: 'number' },
      {
        name: 'sum',
        type: 'formula',
        expression: Array.from({ length: 1000 }, () => 'a').join('+'),
        resultType: 'number',
      },
      { name: 'neg', type: 'formula', expression: `1${'-1'.repeat(999)}`, resultType: 'number' },
      {
        name: 'cmp',
        type: 'formula',
        expression: Array.from({ length: 285 }, () => 'a>0').join(' OR '),
        resultType: 'boolean',
      },
    ];
    const values = computeFormulas(compiled(fields), new Map([['a', 1]]), RECORD);
    expect(Object.fromEntries(values)).toEqual({ sum: 1000, neg: -998, cmp: true });
  });

  it('reads fields named like keywords and functions in braces, and refuses odd braces with a position', () => {
    const fields: FieldLike[] = [
      { name: 'AND', type: 'number' },
      { name: 'IF', type: 'number' },
      { name: 'true', type: 'boolean' },
      { name: 'f', type: 'formula', expression: 'IF({true}, {AND} + IF, ROUND(IF))', resultType: 'number' },
    ];
    const values = computeFormulas(
      compiled(fields),
      new Map<string, unknown>([
        ['AND', 2],
        ['IF', 3],
        ['true', true],
      ]),
      RECORD,
    );
    expect(values.get('f')).toBe(5);
    for (const [expression, position] of [
      ['{AND + 1', 0],
      ['1 + {', 4],
      ['{} + 1', 0],
      ['AND + 1', 0],
      ['"{AND}', 0],
    ] as const) {
      const result = compileFormulas([
        ...fields.slice(0, 3),
        { name: 'g', type: 'formula', expression, resultType: 'number' },
      ]);
      expect(result.ok, expression).toBe(false);
      if (!result.ok) expect(result.problems[0]?.position, expression).toBe(position);
    }
  });
});
