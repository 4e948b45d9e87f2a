import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeFormulas, evaluate } from '../../src/domain/formula-eval.ts';
import {
  compileFormulas,
  MAX_DEPTH,
  MAX_EXPRESSION,
  type Compiled,
  type FieldLike,
  type ResultType,
} from '../../src/domain/formula-language.ts';

const FIELDS: FieldLike[] = [
  { name: 'amount', type: 'number' },
  { name: 'qty', type: 'integer' },
  { name: 'Unit price', type: 'number' },
  { name: 'title', type: 'text' },
  { name: 'status', type: 'select' },
  { name: 'done', type: 'boolean' },
  { name: 'start', type: 'date' },
  { name: 'end', type: 'date' },
  { name: 'at', type: 'datetime' },
  { name: 'until', type: 'datetime' },
  { name: 'Len', type: 'number' },
  { name: 'tags', type: 'multiSelect' },
  { name: 'data', type: 'json' },
];
const RECORD = { createdAt: Date.parse('2024-03-01T12:00:00Z'), updatedAt: Date.parse('2024-03-02T18:30:00Z') };

const formula = (expression: string, resultType: string = 'number', name = 'f'): FieldLike => ({
  name,
  type: 'formula',
  expression,
  resultType,
});

function compile(expression: string, resultType: ResultType): Compiled {
  const result = compileFormulas([...FIELDS, formula(expression, resultType)]);
  if (!result.ok) throw new Error(`${expression}: ${JSON.stringify(result.problems)}`);
  return result.formulas[0] as Compiled;
}

/** The value of `expression` as a formula of `resultType` over a record holding `values`. */
const value = (expression: string, resultType: ResultType = 'number', values: Record<string, unknown> = {}): unknown =>
  evaluate(compile(expression, resultType), new Map(Object.entries(values)), RECORD);

/** The problems of `expression` as codes at positions. */
function problems(expression: string, resultType: string = 'number'): { code: string; position: number }[] {
  const result = compileFormulas([...FIELDS, formula(expression, resultType)]);
  return result.ok ? [] : result.problems.map(({ code, position }) => ({ code, position }));
}

describe('formula literals and operators', () => {
  it('reads numbers, texts with escapes and keywords in any case', () => {
    expect(value('12')).toBe(12);
    expect(value('3.5')).toBe(3.5);
    expect(value('1e3')).toBe(1000);
    expect(value('.5')).toBe(0.5);
    expect(value('"say \\"hi\\" \\\\ there"', 'text')).toBe('say "hi" \\ there');
    expect(value("'it\\'s'", 'text')).toBe("it's");
    expect(value('true', 'boolean')).toBe(true);
    expect(value('False', 'boolean')).toBe(false);
    expect(value('null')).toBe(null);
  });

  it('computes arithmetic, and is blank where an operand is', () => {
    expect(value('7 + 2')).toBe(9);
    expect(value('7 - 2')).toBe(5);
    expect(value('7 * 2')).toBe(14);
    expect(value('7 / 2')).toBe(3.5);
    expect(value('7 % 3')).toBe(1);
    expect(value('-7 % 3')).toBe(-1);
    expect(value('-{amount}', 'number', { amount: 4 })).toBe(-4);
    for (const expression of [
      '{amount} + 1',
      '1 - {amount}',
      '{amount} * 2',
      '2 / {amount}',
      '{amount} % 2',
      '-{amount}',
    ])
      expect(value(expression), expression).toBe(null);
  });

  it('gives blank for a division by zero and for a result past the largest number', () => {
    expect(value('1 / 0')).toBe(null);
    expect(value('1 % 0')).toBe(null);
    expect(value('{amount} / {qty}', 'number', { amount: 1, qty: 0 })).toBe(null);
    expect(value('1e308 * 10')).toBe(null);
    expect(value('-1e308 - 1e308')).toBe(null);
    expect(value('IF(ISBLANK(1e308 * 10), 1, 2)')).toBe(1);
    expect(value('0 * -1')).toBe(0);
    expect(Object.is(value('0 * -1'), 0)).toBe(true);
  });

  it('binds as usual: OR, AND, NOT, comparison, &, + -, * / %, unary minus, parentheses', () => {
    expect(value('1 + 2 * 3')).toBe(7);
    expect(value('(1 + 2) * 3')).toBe(9);
    expect(value('2 - 3 - 4')).toBe(-5);
    expect(value('8 / 2 / 2')).toBe(2);
    expect(value('-2 * 3 + 10 % 4')).toBe(-4);
    expect(value('- (2 + 3)')).toBe(-5);
    expect(value('"n" & 1 + 2', 'text')).toBe('n3');
    expect(value('"a" & "b" = "ab"', 'boolean')).toBe(true);
    expect(value('1 + 1 = 2 AND 3 > 2', 'boolean')).toBe(true);
    expect(value('NOT 1 = 2', 'boolean')).toBe(true);
    expect(value('TRUE OR FALSE AND FALSE', 'boolean')).toBe(true);
    expect(value('(TRUE OR FALSE) AND FALSE', 'boolean')).toBe(false);
    expect(value('NOT FALSE AND FALSE', 'boolean')).toBe(false);
  });

  it('compares numbers, texts by code unit, dates, datetimes by instant and booleans for equality', () => {
    const cases: [string, boolean][] = [
      ['1 = 1', true],
      ['1 != 1', false],
      ['1 <> 2', true],
      ['1 < 2', true],
      ['2 <= 2', true],
      ['1 > 2', false],
      ['2 >= 3', false],
      ['"B" < "a"', true],
      ['"a" = "A"', false],
      ['"é" > "z"', true],
      ['TRUE = TRUE', true],
      ['TRUE != FALSE', true],
      ['{start} < {end}', true],
      ['{start} = {end}', false],
      ['{at} = {until}', true],
      ['{at} >= {until}', true],
    ];
    const values = {
      start: '2024-01-31',
      end: '2024-02-01',
      at: '2024-01-01T10:00:00+02:00',
      until: '2024-01-01T08:00:00Z',
    };
    for (const [expression, expected] of cases) expect(value(expression, 'boolean', values), expression).toBe(expected);
    for (const expression of ['{amount} = 1', '1 < {amount}', '{title} = "x"', '{start} < {end}', 'NULL = NULL'])
      expect(value(expression, 'boolean'), expression).toBe(null);
  });

  it('treats a blank as false in AND, OR and the condition of IF, and NOT of a blank as blank', () => {
    expect(value('{done} AND TRUE', 'boolean')).toBe(false);
    expect(value('{done} OR TRUE', 'boolean')).toBe(true);
    expect(value('{done} OR {done}', 'boolean')).toBe(false);
    expect(value('NOT {done}', 'boolean')).toBe(null);
    expect(value('NOT {done}', 'boolean', { done: false })).toBe(true);
    expect(value('IF({done}, 1, 2)')).toBe(2);
  });

  it('joins any value with &: a blank as empty text, booleans, dates and datetimes as written', () => {
    const values = { amount: 2.5, done: true, start: '2024-01-31', at: '2024-01-01T10:00:00+02:00' };
    expect(value('{title} & "|" & {amount} & "|" & {done} & "|" & {start} & "|" & {at}', 'text', values)).toBe(
      '|2.5|true|2024-01-31|2024-01-01T08:00:00.000Z',
    );
    expect(value('{title} & NULL', 'text')).toBe('');
  });

  it('gives blank for a text longer than 100,000 characters', () => {
    const long = 'x'.repeat(60_000);
    expect(value('{title} & {title}', 'text', { title: long })).toBe(null);
    expect(value('{title} & {status}', 'text', { title: long, status: 'y'.repeat(40_000) })).toHaveLength(100_000);
    expect(value('UPPER({title} & {status})', 'text', { title: long, status: 'ß'.repeat(30_000) })).toBe(null);
  });
});

describe('formula field references', () => {
  it('reads {a field with spaces}, a plain identifier, and a function name that is not called', () => {
    const values = { amount: 3, 'Unit price': 2.5, Len: 4 };
    expect(value('{Unit price} * amount', 'number', values)).toBe(7.5);
    expect(value('{amount}', 'number', values)).toBe(3);
    expect(value('Len + LEN("ab")', 'number', values)).toBe(6);
  });

  it('maps integer, select and text fields to numbers and texts', () => {
    expect(value('{qty} + 1', 'number', { qty: 2 })).toBe(3);
    expect(value('{status} & {title}', 'text', { status: 'open', title: '!' })).toBe('open!');
  });

  it('reads createdAt and updatedAt as datetimes', () => {
    expect(value('createdAt', 'datetime')).toBe('2024-03-01T12:00:00.000Z');
    expect(value('{updatedAt}', 'datetime')).toBe('2024-03-02T18:30:00.000Z');
    expect(value('DATEDIFF(createdAt, updatedAt, "hours")')).toBe(30);
    expect(compile('YEAR(createdAt) + YEAR(updatedAt)', 'number').inputs).toEqual(['createdAt', 'updatedAt']);
  });

  it('reads a stored value of another type than its field as blank, and never throws on one', () => {
    expect(value('{amount} + 1', 'number', { amount: '12' })).toBe(null);
    expect(value('LEN({title})', 'number', { title: 12 })).toBe(null);
    expect(value('NOT {done}', 'boolean', { done: 'true' })).toBe(null);
    expect(value('YEAR({start})', 'number', { start: '2024-02-30' })).toBe(null);
    expect(value('YEAR({start})', 'number', { start: '2024-01-01T00:00:00Z' })).toBe(null);
    expect(value('YEAR({at})', 'number', { at: 'yesterday' })).toBe(null);
    expect(value('YEAR({at})', 'number', { at: new Date() })).toBe(null);
    const formulas = [
      compile('{amount} * {qty} + LEN({title} & {status})', 'number'),
      compile('IF({done}, {start}, DATEADD({end}, 1, "months"))', 'date'),
      compile('MAX({at}, {until}, createdAt)', 'datetime'),
      compile('DATEDIFF({start}, {end}, "years") = ROUND({Unit price}, {Len})', 'boolean'),
    ];
    const odd = fc.oneof(
      fc.anything(),
      fc.constantFrom(NaN, -Infinity, 10n, Symbol('x'), new Date(NaN), () => 1),
    );
    fc.assert(
      fc.property(fc.array(odd, { minLength: FIELDS.length, maxLength: FIELDS.length }), (stored) => {
        const values = new Map<string, unknown>(FIELDS.map((field, i) => [field.name, stored[i]]));
        const computed = computeFormulas(formulas, values, RECORD);
        expect(
          [...computed.values()].every((v) => v === null || ['number', 'string', 'boolean'].includes(typeof v)),
        ).toBe(true);
      }),
    );
  });
});

describe('formula functions', () => {
  it('IF, IFS, COALESCE and ISBLANK choose among values, blanks included', () => {
    expect(value('IF(1 < 2, "yes", "no")', 'text')).toBe('yes');
    expect(value('IF(1 > 2, "yes", "no")', 'text')).toBe('no');
    expect(value('IF(1 > 2, "yes")', 'text')).toBe(null);
    expect(value('IF(TRUE, NULL, 3)')).toBe(null);
    expect(value('IFS(FALSE, 1, TRUE, 2, TRUE, 3)')).toBe(2);
    expect(value('IFS(FALSE, 1, {done}, 2)')).toBe(null);
    expect(value('COALESCE({amount}, {qty}, 0)', 'number', { qty: 5 })).toBe(5);
    expect(value('COALESCE({amount}, {qty})')).toBe(null);
    expect(value('ISBLANK({amount})', 'boolean')).toBe(true);
    expect(value('ISBLANK({amount})', 'boolean', { amount: 0 })).toBe(false);
    expect(value('ISBLANK({title})', 'boolean', { title: '' })).toBe(false);
  });

  it('ROUND rounds half away from zero in decimal, FLOOR, CEIL and ABS as usual', () => {
    const cases: [string, number][] = [
      ['ROUND(2.5)', 3],
      ['ROUND(-2.5)', -3],
      ['ROUND(2.4999)', 2],
      ['ROUND(1.005, 2)', 1.01],
      ['ROUND(-1.005, 2)', -1.01],
      ['ROUND(1234.5678, 1.9)', 1234.6],
      ['ROUND(1250, -2)', 1300],
      ['ROUND(1e-7, 3)', 0],
      ['ROUND(0.1 + 0.2, 400)', 0.30000000000000004],
      ['ROUND(123, -400)', 0],
      ['ROUND(-0.4)', 0],
      ['FLOOR(-1.5)', -2],
      ['CEIL(1.2)', 2],
      ['ABS(-3)', 3],
    ];
    for (const [expression, expected] of cases) expect(value(expression), expression).toBe(expected);
    for (const expression of ['ROUND({amount})', 'ROUND(1.5, {amount})', 'FLOOR({amount})', 'CEIL({amount})'])
      expect(value(expression), expression).toBe(null);
    expect(value('ABS({amount})')).toBe(null);
  });

  it('MIN and MAX take numbers or dates of one type, and are blank when an argument is', () => {
    expect(value('MIN(3, 1, 2)')).toBe(1);
    expect(value('MAX(3, 1, 2)')).toBe(3);
    expect(value('MAX(-1)')).toBe(-1);
    expect(value('MIN(3, {amount})')).toBe(null);
    const values = {
      start: '2024-01-31',
      end: '2023-12-31',
      at: '2024-01-01T10:00:00+02:00',
      until: '2024-01-01T09:00Z',
    };
    expect(value('MIN({start}, {end})', 'date', values)).toBe('2023-12-31');
    expect(value('MAX({at}, {until})', 'datetime', values)).toBe('2024-01-01T09:00:00.000Z');
  });

  it('LEN counts code points; LOWER, UPPER, TRIM, LEFT, RIGHT and CONTAINS work on texts', () => {
    expect(value('LEN("héllo 🛫")')).toBe(7);
    expect(value('LOWER("ÀbC")', 'text')).toBe('àbc');
    expect(value('UPPER("straße")', 'text')).toBe('STRASSE');
    expect(value('TRIM("  a b \n")', 'text')).toBe('a b');
    expect(value('LEFT("🛫abc", 2)', 'text')).toBe('🛫a');
    expect(value('RIGHT("abc🛫", 2)', 'text')).toBe('c🛫');
    expect(value('LEFT("abc", 10) & RIGHT("abc", 0) & LEFT("abc", -1)', 'text')).toBe('abc');
    expect(value('LEFT("abc", 1.9)', 'text')).toBe('a');
    expect(value('CONTAINS("abc", "b")', 'boolean')).toBe(true);
    expect(value('CONTAINS("abc", "B")', 'boolean')).toBe(false);
    expect(value('CONTAINS("abc", "")', 'boolean')).toBe(true);
    for (const [expression, type] of [
      ['LEN({title})', 'number'],
      ['LOWER({title})', 'text'],
      ['UPPER({title})', 'text'],
      ['TRIM({title})', 'text'],
      ['LEFT({title}, 1)', 'text'],
      ['RIGHT("abc", {amount})', 'text'],
      ['CONTAINS({title}, "a")', 'boolean'],
      ['CONTAINS("a", {title})', 'boolean'],
    ] as const)
      expect(value(expression, type), expression).toBe(null);
  });
});

describe('formula dates', () => {
  const add = (start: string, n: number, unit: string): unknown =>
    value(`DATEADD({start}, ${n}, "${unit}")`, 'date', { start });

  it('DATEADD moves a date, clamping a month step to the end of a shorter month', () => {
    expect(add('2024-01-31', 1, 'months')).toBe('2024-02-29');
    expect(add('2023-01-31', 1, 'months')).toBe('2023-02-28');
    expect(add('2024-03-31', -1, 'months')).toBe('2024-02-29');
    expect(add('2024-01-31', 13, 'months')).toBe('2025-02-28');
    expect(add('2024-02-29', 1, 'years')).toBe('2025-02-28');
    expect(add('2024-01-01', 2, 'weeks')).toBe('2024-01-15');
    expect(add('2024-01-01', -1, 'days')).toBe('2023-12-31');
    expect(add('2024-01-01', 1.9, 'DAYS')).toBe('2024-01-02');
    expect(add('9999-12-31', 1, 'days')).toBe(null);
    expect(add('0001-01-01', -1, 'months')).toBe(null);
    expect(add('2024-01-01', 1e300, 'years')).toBe(null);
    expect(value('DATEADD({start}, 1, "days")', 'date')).toBe(null);
    expect(value('DATEADD({start}, {amount}, "days")', 'date', { start: '2024-01-01' })).toBe(null);
  });

  it('DATEADD moves a datetime by any unit, in UTC', () => {
    const at = '2024-01-31T23:30:00+02:00';
    expect(value('DATEADD({at}, 90, "minutes")', 'datetime', { at })).toBe('2024-01-31T23:00:00.000Z');
    expect(value('DATEADD({at}, 1, "months")', 'datetime', { at })).toBe('2024-02-29T21:30:00.000Z');
    expect(value('DATEADD({at}, -3, "hours")', 'datetime', { at })).toBe('2024-01-31T18:30:00.000Z');
    expect(value('DATEADD({at}, 61, "seconds")', 'datetime', { at })).toBe('2024-01-31T21:31:01.000Z');
  });

  it('DATEDIFF counts whole units from the first to the second, cut toward zero', () => {
    const diff = (a: string, b: string, unit: string): unknown =>
      value(`DATEDIFF({start}, {end}, "${unit}")`, 'number', { start: a, end: b });
    expect(diff('2024-01-01', '2024-03-01', 'days')).toBe(60);
    expect(diff('2024-03-01', '2024-01-01', 'days')).toBe(-60);
    expect(diff('2024-01-01', '2024-01-14', 'weeks')).toBe(1);
    expect(diff('2024-01-14', '2024-01-01', 'weeks')).toBe(-1);
    expect(diff('2024-01-31', '2024-02-29', 'months')).toBe(1);
    expect(diff('2024-01-31', '2024-02-28', 'months')).toBe(0);
    expect(diff('2024-02-29', '2024-01-31', 'months')).toBe(-1);
    expect(diff('2024-01-15', '2025-01-14', 'months')).toBe(11);
    expect(diff('2020-02-29', '2024-02-28', 'years')).toBe(3);
    expect(diff('2020-02-29', '2024-02-29', 'years')).toBe(4);
    expect(diff('2024-02-29', '2020-03-01', 'years')).toBe(-3);
    expect(diff('2024-01-01', '2024-01-01', 'days')).toBe(0);
    const hours = (at: string, until: string): unknown =>
      value('DATEDIFF({at}, {until}, "hours")', 'number', { at, until });
    expect(hours('2024-01-01T00:00:00Z', '2024-01-01T05:59:59Z')).toBe(5);
    expect(hours('2024-01-01T05:59:59Z', '2024-01-01T00:00:00Z')).toBe(-5);
    expect(hours('2024-01-01T02:00:00+02:00', '2024-01-01T01:00:00Z')).toBe(1);
    expect(value('DATEDIFF({start}, {end}, "days")', 'number', { start: '2024-01-01' })).toBe(null);
  });

  it('YEAR, MONTH and DAY read a date or a datetime in UTC', () => {
    const values = { start: '2024-02-29', at: '2024-01-01T01:00:00+02:00' };
    expect(value('YEAR({start}) * 10000 + MONTH({start}) * 100 + DAY({start})', 'number', values)).toBe(20240229);
    expect(value('YEAR({at}) * 10000 + MONTH({at}) * 100 + DAY({at})', 'number', values)).toBe(20231231);
    expect(value('YEAR({start})')).toBe(null);
  });
});

describe('formula problems', () => {
  it('reports a syntax problem at the offending token', () => {
    const cases: [string, number, string][] = [
      ['1 +', 3, 'expected an expression at 3'],
      ['(1 + 2', 6, 'expected ")" at 6'],
      ['ROUND(1 2)', 8, 'expected "," or ")" at 8'],
      ['1 2', 2, 'unexpected number at 2'],
      ['{a} {b}', 4, 'unexpected field at 4'],
      ['1 < 2 < 3', 6, 'unexpected "<" at 6'],
      ['"abc', 0, 'unterminated text at 0'],
      ['"a\\nb"', 2, 'expected \\", \\\' or \\\\ at 2'],
      ['{amount', 0, 'unterminated field name at 0'],
      ['1 $ 2', 2, 'unexpected character at 2'],
      ['1 == 2', 3, 'unexpected "=" at 3'],
      ['TRUE AND OR', 9, 'unexpected OR at 9'],
      ['1e999', 0, 'number out of range at 0'],
      ['', 0, 'expected an expression at 0'],
      ['  ', 2, 'expected an expression at 2'],
    ];
    for (const [expression, position, message] of cases) {
      const result = compileFormulas([formula(expression)]);
      expect(result, expression).toEqual({ ok: false, problems: [{ field: 0, position, code: 'syntax', message }] });
    }
  });

  it('reports an unknown field, an unknown function and a field formulas cannot read at its position', () => {
    expect(problems('{nope} + 1')).toEqual([{ code: 'unknown_field', position: 0 }]);
    expect(problems('1 + createdat', 'datetime')).toEqual([
      { code: 'type', position: 2 },
      { code: 'unknown_field', position: 4 },
    ]);
    expect(problems('NOW()', 'datetime')).toEqual([{ code: 'unknown_function', position: 0 }]);
    expect(problems('1 + today()')).toEqual([{ code: 'unknown_function', position: 4 }]);
    expect(problems('LEN({tags}) + LEN({data})')).toEqual([
      { code: 'not_usable', position: 4 },
      { code: 'not_usable', position: 18 },
    ]);
  });

  it('reports a call with the wrong number of arguments at the function name', () => {
    const cases = ['ROUND(1, 2, 3)', 'IF(TRUE)', 'IF(TRUE, 1, 2, 3)', 'IFS(TRUE, 1, FALSE)', 'IFS()', 'COALESCE()'];
    for (const expression of [...cases, 'MIN()', 'LEN("a", "b")', 'LEFT("a")', 'DATEADD({start}, 1)', 'ABS()'])
      expect(problems(`1 + ${expression}`), expression).toEqual([{ code: 'arity', position: 4 }]);
    const result = compileFormulas([formula('ROUND(1, 2, 3)')]);
    expect(result.ok ? [] : result.problems.map((p) => p.message)).toEqual(['ROUND takes 1 or 2 arguments, got 3']);
  });

  it('reports a type problem at the operand of the wrong type', () => {
    const at = (expression: string, needle: string, resultType = 'number'): void =>
      expect(problems(expression, resultType), expression).toEqual([
        { code: 'type', position: expression.indexOf(needle) },
      ]);
    at('{amount} + "x"', '"x"');
    at('{title} * 2', '{title}');
    at('-{title}', '{title}');
    at('{start} + 1', '{start}');
    at('1 = "1"', '"1"', 'boolean');
    at('{start} = {at}', '{at}', 'boolean');
    at('NOT 1', '1', 'boolean');
    at('1 AND TRUE', '1', 'boolean');
    at('IF(1, 2, 3)', '1,');
    at('IF(TRUE, 1, "x")', '"x"');
    at('IF(TRUE, NULL, 1) + IFS(TRUE, 1, FALSE, "a")', '"a"');
    at('COALESCE({amount}, {title})', '{title}');
    at('MIN(1, {start})', '{start}');
    at('MAX(1, "b")', '"b"');
    at('LEN(12)', '12');
    at('LEFT("abc", "1")', '"1"', 'text');
    at('ROUND(1, "2")', '"2"');
    at('YEAR(1)', '1');
    at('DATEADD(1, 1, "days")', '1,', 'date');
    at('DATEADD({start}, 1, "hours")', '"hours"', 'date');
    at('DATEADD({start}, 1, "fortnights")', '"fortnights"', 'date');
    at('DATEADD({start}, 1, {title})', '{title}', 'date');
    at('DATEDIFF({start}, {at}, "days")', '{at}');
    at('DATEDIFF({start}, {end}, "minutes")', '"minutes"');
    expect(problems('TRUE < FALSE', 'boolean')).toEqual([
      { code: 'type', position: 0 },
      { code: 'type', position: 7 },
    ]);
    const result = compileFormulas([...FIELDS, formula('{amount} + "x"')]);
    expect(result.ok ? [] : result.problems.map((p) => p.message)).toEqual(['expected a number, got text']);
  });

  it('reports each type problem across the expression, and none again above a node in error', () => {
    expect(problems('{title} * 2 + {done} + {nope}')).toEqual([
      { code: 'type', position: 0 },
      { code: 'type', position: 14 },
      { code: 'unknown_field', position: 23 },
    ]);
    expect(problems('ROUND({nope}) & FOO(1)', 'text')).toEqual([
      { code: 'unknown_field', position: 6 },
      { code: 'unknown_function', position: 16 },
    ]);
  });

  it('wants the expression of the result type exactly, NULL fitting any', () => {
    expect(problems('1 + 2', 'text')).toEqual([{ code: 'type', position: 2 }]);
    expect(problems('"x"', 'number')).toEqual([{ code: 'type', position: 0 }]);
    expect(problems('{start}', 'datetime')).toEqual([{ code: 'type', position: 0 }]);
    expect(problems('createdAt', 'date')).toEqual([{ code: 'type', position: 0 }]);
    for (const type of ['number', 'text', 'boolean', 'date', 'datetime']) expect(problems('NULL', type)).toEqual([]);
  });

  it('reports a formula field without a valid resultType at position 0, and its other problems too', () => {
    const fields: FieldLike[] = [
      { name: 'a', type: 'formula', expression: '1' },
      formula('{nope}', 'json', 'b'),
      formula('{a} + {b}', 'number', 'c'),
    ];
    expect(compileFormulas(fields)).toEqual({
      ok: false,
      problems: [
        { field: 0, position: 0, code: 'type', message: expect.stringContaining('resultType') },
        { field: 1, position: 0, code: 'type', message: expect.stringContaining('resultType') },
        { field: 1, position: 0, code: 'unknown_field', message: 'the formula reads nope, which is not a field' },
      ],
    });
  });

  it('reports an expression of 2,001 characters at 2000, and accepts 2,000', () => {
    const ok = `${'1+'.repeat(999)}1 `;
    expect(ok).toHaveLength(MAX_EXPRESSION);
    expect(value(ok)).toBe(1000);
    expect(problems(`${ok} `)).toEqual([{ code: 'too_long', position: 2000 }]);
  });

  it('accepts 32 levels of parentheses, calls and prefix operators, and reports the 33rd where it opens', () => {
    // Each builds an expression of `levels` levels and says where the last level opens.
    const nests: [(levels: number) => string, (levels: number) => number][] = [
      [(n) => `${'('.repeat(n)}1${')'.repeat(n)}`, (n) => n - 1],
      [(n) => `${'ABS('.repeat(n)}1${')'.repeat(n)}`, (n) => 4 * (n - 1)],
      [(n) => `${'-'.repeat(n)}1`, (n) => n - 1],
      [(n) => `IF(${'NOT '.repeat(n - 1)}TRUE, 1, 2)`, (n) => 3 + 4 * (n - 2)],
      [(n) => `${'-('.repeat(Math.floor(n / 2))}${'-'.repeat(n % 2)}1${')'.repeat(Math.floor(n / 2))}`, (n) => n - 1],
    ];
    for (const [nest, opens] of nests) {
      expect(problems(nest(MAX_DEPTH)), nest(MAX_DEPTH)).toEqual([]);
      expect(problems(nest(MAX_DEPTH + 1)), nest(MAX_DEPTH + 1)).toEqual([
        { code: 'too_deep', position: opens(MAX_DEPTH + 1) },
      ]);
    }
    expect(value(`${'ABS('.repeat(MAX_DEPTH)}1${')'.repeat(MAX_DEPTH)}`)).toBe(1);
  });
});

describe('formulas reading formulas', () => {
  const chain: FieldLike[] = [
    { name: 'amount', type: 'number' },
    formula('{Net} * 1.2', 'number', 'Gross'),
    formula('{Gross} & " incl. tax, from " & {Net}', 'text', 'label'),
    formula('{amount} - 1', 'number', 'Net'),
  ];

  it('come after the formulas they read, each with the names it reads', () => {
    const result = compileFormulas(chain);
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(result.formulas.map((f) => [f.name, f.inputs])).toEqual([
      ['Net', ['amount']],
      ['Gross', ['Net']],
      ['label', ['Gross', 'Net']],
    ]);
    const values = computeFormulas(
      result.formulas,
      new Map([
        ['amount', 11],
        ['Net', 999],
      ]),
      RECORD,
    );
    expect(values).toEqual(
      new Map<string, unknown>([
        ['Net', 10],
        ['Gross', 12],
        ['label', '12 incl. tax, from 10'],
      ]),
    );
    expect(computeFormulas(result.formulas, new Map(), RECORD)).toEqual(
      new Map<string, unknown>([
        ['Net', null],
        ['Gross', null],
        ['label', ' incl. tax, from '],
      ]),
    );
    const gross = result.formulas[1] as Compiled;
    expect(evaluate(gross, new Map([['Net', 5]]), RECORD)).toBe(6);
  });

  it('report each formula of a cycle at its reference into the cycle', () => {
    const fields = [
      formula('{b} + 1', 'number', 'a'),
      formula('2 * {c} + {a}', 'number', 'b'),
      formula('{b}', 'number', 'c'),
      formula('{a} + 1', 'number', 'd'),
      formula('1 + {e}', 'number', 'e'),
    ];
    expect(compileFormulas(fields)).toEqual({
      ok: false,
      problems: [
        { field: 0, position: 0, code: 'cycle', message: expect.any(String) },
        { field: 1, position: 4, code: 'cycle', message: expect.any(String) },
        { field: 2, position: 0, code: 'cycle', message: expect.any(String) },
        { field: 4, position: 4, code: 'cycle', message: expect.any(String) },
      ],
    });
  });

  it('are ordered in a definition of 200 fields that lists each before what it reads', () => {
    const fields: FieldLike[] = Array.from({ length: 200 }, (_, i) =>
      i % 2 === 0
        ? { name: `n${i}`, type: 'number' }
        : formula(`ROUND({n${i - 1}} * 1.5, 2) + ${i > 1 ? `{n${i - 3}} + {f${i - 2}}` : '0'}`, 'number', `f${i}`),
    ).reverse();
    const result = compileFormulas(fields);
    expect(result.ok && result.formulas.map((f) => f.name).slice(0, 3)).toEqual(['f1', 'f3', 'f5']);
  });
});

describe('formulas on any input', () => {
  const units = [
    ...['{', '}', '(', ')', '"', "'", '\\', ',', '+', '-', '*', '/', '%', '&', '=', '<', '>', '!', ' ', '1', '.'],
    ...['e', '9', 'a', '_', 'é', '🛫', 'IF', 'IFS', 'ROUND', 'MIN', 'LEFT', 'DATEADD', 'DATEDIFF', 'AND', 'OR', 'NOT'],
    ...['NULL', 'TRUE', 'amount', '{Unit price}', 'title', '{start}', '{at}', 'createdAt', '"days"', '"months"'],
  ];
  const types = fc.constantFrom<ResultType>('number', 'text', 'boolean', 'date', 'datetime');

  it('never throw on 2,000 random strings of the grammar, and place every problem within the expression', () => {
    const expression = fc.string({ unit: fc.constantFrom(...units), maxLength: 40 });
    fc.assert(
      fc.property(expression, types, (e, type) => {
        const result = compileFormulas([...FIELDS, formula(e, type)]);
        if (result.ok) return;
        for (const problem of result.problems) {
          expect(problem.field).toBe(FIELDS.length);
          expect(problem.position).toBeGreaterThanOrEqual(0);
          expect(problem.position).toBeLessThanOrEqual(e.length);
        }
      }),
      { numRuns: 2000 },
    );
  });

  // Expressions of each type, built from the grammar; the same random choice of function and operator.
  const { number, text, boolean, date, datetime } = fc.letrec<Record<ResultType, string>>((tie) => {
    const call = (name: string, ...args: fc.Arbitrary<string>[]): fc.Arbitrary<string> =>
      fc.tuple(...args).map((parts) => `${name}(${parts.join(', ')})`);
    const unit = fc.constantFrom('"days"', '"weeks"', '"months"', '"years"');
    const either = <T extends ResultType>(type: T): fc.Arbitrary<string> =>
      fc.oneof(call('IF', tie('boolean'), tie(type), tie(type)), call('COALESCE', tie(type), tie(type)));
    const pick = (...options: fc.Arbitrary<string>[]): fc.Arbitrary<string> =>
      fc.oneof({ depthSize: 'small', maxDepth: 4 }, ...options);
    return {
      number: pick(
        fc.constantFrom('1', '0', '2.5', '1e308', '-3', '{amount}', 'qty', '{Unit price}', 'NULL'),
        fc
          .tuple(tie('number'), fc.constantFrom('+', '-', '*', '/', '%'), tie('number'))
          .map(([a, op, b]) => `(${a} ${op} ${b})`),
        fc.tuple(fc.constantFrom('ROUND', 'FLOOR', 'CEIL', 'ABS', '-'), tie('number')).map(([f, a]) => `${f}(${a})`),
        call('ROUND', tie('number'), tie('number')),
        call('MIN', tie('number'), tie('number')),
        call('LEN', tie('text')),
        fc.tuple(fc.constantFrom('YEAR', 'MONTH', 'DAY'), tie('date')).map(([f, a]) => `${f}(${a})`),
        call('DATEDIFF', tie('date'), tie('date'), unit),
        either('number'),
      ),
      text: pick(
        fc.constantFrom('"a"', '""', '"É🛫"', '{title}', 'status', 'NULL'),
        fc.tuple(tie('text'), fc.oneof(tie('number'), tie('date'), tie('boolean'))).map(([a, b]) => `(${a} & ${b})`),
        fc.tuple(fc.constantFrom('LOWER', 'UPPER', 'TRIM'), tie('text')).map(([f, a]) => `${f}(${a})`),
        fc.tuple(fc.constantFrom('LEFT', 'RIGHT'), tie('text'), tie('number')).map(([f, a, b]) => `${f}(${a}, ${b})`),
        either('text'),
      ),
      boolean: pick(
        fc.constantFrom('TRUE', 'false', '{done}', 'NULL'),
        fc
          .tuple(tie('number'), fc.constantFrom('=', '!=', '<>', '<', '<=', '>', '>='), tie('number'))
          .map(([a, op, b]) => `(${a} ${op} ${b})`),
        fc.tuple(tie('boolean'), fc.constantFrom('AND', 'OR'), tie('boolean')).map(([a, op, b]) => `(${a} ${op} ${b})`),
        tie('boolean').map((a) => `(NOT ${a})`),
        fc.tuple(tie('text'), tie('date')).map(([a, b]) => `(ISBLANK(${a}) OR ${b} < {end})`),
        call('CONTAINS', tie('text'), tie('text')),
        either('boolean'),
      ),
      date: pick(
        fc.constantFrom('{start}', 'end', 'NULL'),
        call('DATEADD', tie('date'), tie('number'), unit),
        call('MAX', tie('date'), tie('date')),
        either('date'),
      ),
      datetime: pick(
        fc.constantFrom('{at}', 'until', 'createdAt', 'updatedAt'),
        call(
          'DATEADD',
          tie('datetime'),
          tie('number'),
          fc.constantFrom('"hours"', '"minutes"', '"seconds"', '"months"'),
        ),
        call('MIN', tie('datetime'), tie('datetime')),
        either('datetime'),
      ),
    };
  });
  const instantText = fc
    .tuple(fc.integer({ min: -61_000_000_000_000, max: 253_000_000_000_000 }), fc.integer({ min: -1439, max: 1439 }))
    .map(([ms, offset]) => {
      const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23);
      const zone = `${offset < 0 ? '-' : '+'}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}`;
      return offset === 0 ? `${local}Z` : `${local}${zone}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
    });
  const stored = fc.record(
    {
      amount: fc.oneof(fc.double(), fc.integer()),
      qty: fc.integer(),
      'Unit price': fc.double({ min: -1e6, max: 1e6, noNaN: true }),
      title: fc.string(),
      status: fc.constantFrom('open', 'closed'),
      done: fc.boolean(),
      start: instantText.map((t) => t.slice(0, 10)),
      end: instantText.map((t) => t.slice(0, 10)),
      at: instantText,
      until: instantText,
    },
    { requiredKeys: [] },
  );
  const shapes: Record<ResultType, (value: unknown) => boolean> = {
    number: (v) => typeof v === 'number' && Number.isFinite(v),
    text: (v) => typeof v === 'string',
    boolean: (v) => typeof v === 'boolean',
    date: (v) => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v),
    datetime: (v) => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(v),
  };

  it('compile every expression of its type and evaluate it to a value of that type or blank', () => {
    const typed = types.chain((type) => fc.tuple(fc.constant(type), { number, text, boolean, date, datetime }[type]));
    fc.assert(
      fc.property(typed, stored, ([type, expression], values) => {
        const result = compileFormulas([...FIELDS, formula(expression, type)]);
        if (!result.ok) {
          expect(result.problems.map((p) => p.code).filter((c) => c !== 'too_long' && c !== 'too_deep')).toEqual([]);
          return;
        }
        const got = computeFormulas(result.formulas, new Map(Object.entries(values)), RECORD).get('f');
        expect(got === null || shapes[type](got), `${expression} = ${String(got)}`).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('read a stored datetime at any offset as Date does, and a stored date as written', () => {
    fc.assert(
      fc.property(instantText, fc.integer({ min: 0, max: 6 }), (at, digits) => {
        const written = digits === 3 ? at : at.replace(/\.\d{3}/, digits === 0 ? '' : `.${'5'.repeat(digits)}`);
        expect(value('{at}', 'datetime', { at: written })).toBe(new Date(Date.parse(written)).toISOString());
        expect(value('{start}', 'date', { start: at.slice(0, 10) })).toBe(at.slice(0, 10));
      }),
    );
  });
});
