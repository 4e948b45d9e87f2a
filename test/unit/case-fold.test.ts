import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CASE_PAIRS, foldCase, foldFrom, FOLD_LAYER, pairsInto, replaceSql } from '../../src/core/case-fold.ts';
import { catalogOf, MAX_FOLDED_LETTERS, parseQuery } from '../../src/domain/query.ts';

// The blocks the table covers: every letter there whose lower case is one other code point.
const BLOCKS = [
  [0xc0, 0xff],
  [0x100, 0x17f],
  [0x180, 0x24f],
  [0x370, 0x3ff],
  [0x400, 0x4ff],
  [0x500, 0x52f],
  [0x530, 0x58f],
  [0x1e00, 0x1eff],
] as const;

const migrations = fileURLToPath(new URL('../../migrations/', import.meta.url).href);

/** The replace() calls of a generated fold as SQLite runs them, innermost first, then lower() (ASCII). */
function sqlFold(text: string, sql: string): string {
  const pairs = [...sql.matchAll(/,'(.)','(.)'\)/gu)].map((m) => [m[1] as string, m[2] as string] as const);
  return pairs
    .reduce((t, [upper, lower]) => t.replaceAll(upper, lower), text)
    .replace(/[A-Z]/g, (c) => c.toLowerCase());
}

describe('case folding beyond ASCII', () => {
  it('maps exactly the letters of the blocks whose lower case is one other code point, as the runtime does', () => {
    const expected: [string, string][] = [];
    for (const [from, to] of BLOCKS)
      for (let c = from; c <= to; c++) {
        const upper = String.fromCodePoint(c);
        const lower = upper.toLowerCase();
        if (lower !== upper && [...lower].length === 1) expected.push([upper, lower]);
      }
    expect(CASE_PAIRS).toEqual(expected);
    expect(CASE_PAIRS.length).toBe(566);
    // No lower case is itself mapped: the replace() chain gives the same result in any order.
    const uppers = new Set(CASE_PAIRS.map(([upper]) => upper));
    expect(CASE_PAIRS.filter(([, lower]) => uppers.has(lower))).toEqual([]);
  });

  it('folds Latin, Greek, Cyrillic and Armenian letter by letter; leaves multi-letter foldings alone', () => {
    expect(foldCase('Émile ÖL Ærø')).toBe('émile öl ærø');
    expect(foldCase('ΣΟΦΊΑ')).toBe('σοφία');
    expect(foldCase('Σοφία')).toBe('σοφία');
    expect(foldCase('МОСКВА Москва')).toBe('москва москва');
    expect(foldCase('ԵՐԵՎԱՆ')).toBe('երևան'.replace('և', 'եվ'));
    expect(foldCase('ĐẶNG VĂN LÂM')).toBe('đặng văn lâm');
    expect(foldCase('Plain ASCII-1')).toBe('plain ascii-1');
    // Out of scope: foldings into several code points, and context (a final sigma).
    expect(foldCase('STRAẞE straße')).toBe('straße straße');
    expect(foldCase('İstanbul')).toBe('İstanbul');
    expect(foldCase('ΟΔΟΣ')).toBe('οδοσ');
    // Outside the blocks: unchanged.
    expect(foldCase('ＡＢＣ 日本')).toBe('ＡＢＣ 日本');
  });

  it('the SQL folds as foldCase does, in layers D1 accepts, small enough for a statement', () => {
    const sql = foldFrom('(SELECT 1 AS value)', 'value');
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...CASE_PAIRS.flat(), 'A', 'z', ' ', 'ß', '日') }), (text) => {
        expect(sqlFold(text, sql)).toBe(foldCase(text));
      }),
    );
    expect(sql.match(/replace\(/g)).toHaveLength(CASE_PAIRS.length);
    // No layer nests more than FOLD_LAYER replace() calls (D1 refuses expressions deeper than 100).
    const layers = sql.split('\nFROM ');
    expect(layers).toHaveLength(Math.ceil(CASE_PAIRS.length / FOLD_LAYER) + 1);
    for (const layer of layers) expect((layer.match(/replace\(/g) ?? []).length).toBeLessThanOrEqual(FOLD_LAYER);
    expect(FOLD_LAYER).toBeLessThanOrEqual(80);
    expect(new TextEncoder().encode(sql).byteLength).toBeLessThan(14_000);
    expect(sql.split('\n').every((line) => [...line].length <= 100)).toBe(true);
  });

  it('contains folds only the letters of the folded value sent: the same answer as folding everything', () => {
    const letters = [...CASE_PAIRS.slice(0, 40).flat(), ...CASE_PAIRS.slice(300, 340).flat(), 'a', 'B', ' ', '\0'];
    const text = fc.string({ unit: fc.constantFrom(...letters), maxLength: 12 });
    fc.assert(
      fc.property(text, text, (value, sent) => {
        const folded = foldCase(sent);
        const sql = replaceSql('v', pairsInto(folded));
        expect(sqlFold(value, sql).includes(folded)).toBe(foldCase(value).includes(folded));
      }),
      { numRuns: 3000 },
    );
    expect(pairsInto('émi')).toEqual([['É', 'é']]);
    expect(pairsInto('скв').map(([upper]) => upper)).toEqual(['В', 'К', 'С']);
    expect(pairsInto('θ').map(([upper]) => upper)).toEqual(['Θ', 'ϴ']);
  });

  it('the newest migration that folds in SQL holds exactly the SQL foldFrom generates', () => {
    const folding = readdirSync(migrations)
      .filter((name) => name.endsWith('.sql'))
      .sort()
      .filter((name) => /replace\((?!\))/.test(readFileSync(`${migrations}${name}`, 'utf8')));
    expect(folding.at(-1)).toBe('0012_unicode_case_fold.sql');
    const text = readFileSync(`${migrations}${folding.at(-1)}`, 'utf8');
    const [head, tail] = foldFrom('\u0001', 'fold_in').split('\u0001') as [string, string];
    // Both triggers and the recomputation of the existing keys, and no other replace().
    expect(text.split(head).length - 1).toBe(3);
    expect(text.split(tail).length - 1).toBe(3);
    expect(text.match(/replace\((?!\))/g)).toHaveLength(3 * CASE_PAIRS.length);
  });
});

describe('contains in a query: the letters it folds are bounded', () => {
  const catalog = catalogOf([
    { id: 1, version: 1, name: 'O', workspaceIds: [1], fields: [{ name: 'title', type: 'text' }] },
  ]);
  const lowers = CASE_PAIRS.map(([, lower]) => lower).join('');
  const message =
    `expected the contains values of a query to hold at most ${MAX_FOLDED_LETTERS} letters with case beyond ` +
    'ASCII (each letter counted once a condition)';

  it(`refuses contains values holding together more than ${MAX_FOLDED_LETTERS} letters with case`, () => {
    const every = { field: 'title', op: 'contains', value: lowers };
    const many = parseQuery({ filter: { or: [every, every, every, every, every] } }, catalog);
    expect(many).toEqual({
      ok: false,
      problems: [
        { pointer: '/filter/or/3/value', code: 'too_many_letters', message },
        { pointer: '/filter/or/4/value', code: 'too_many_letters', message },
      ],
    });
    // Three such values are fine, and so are 50 long values of a few letters.
    expect(parseQuery({ filter: { or: [every, every, every] } }, catalog).ok).toBe(true);
    const long = { field: 'name', op: 'contains', value: 'Émile Москва '.repeat(10_000) };
    expect(parseQuery({ filter: { and: Array.from({ length: 50 }, () => long) } }, catalog).ok).toBe(true);
  });
});
