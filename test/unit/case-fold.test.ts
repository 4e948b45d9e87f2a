import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CASE_PAIRS, containsGlob, foldCase, foldFrom, FOLD_LAYER, MAX_CONTAINS } from '../../src/core/case-fold.ts';
import { catalogOf, parseQuery } from '../../src/domain/query.ts';

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

/** SQLite's GLOB as a regular expression: `*`, `?` and classes (a `]` first in a class is literal). */
function glob(pattern: string): RegExp {
  const escape = (c: string) => c.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
  const chars = [...pattern];
  let source = '';
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === '*') source += '[\\s\\S]*';
    else if (c === '?') source += '[\\s\\S]';
    else if (c === '[') {
      let j = i + 1;
      const members = [chars[j] as string];
      for (j++; chars[j] !== ']'; j++) members.push(chars[j] as string);
      source += `[${members.map((m) => (m === '-' ? '\\-' : escape(m))).join('')}]`;
      i = j;
    } else source += escape(c);
  }
  return new RegExp(`^${source}$`, 'u');
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

  it('contains: the GLOB pattern matches exactly the texts whose fold holds the fold of the value', () => {
    const letters = [...CASE_PAIRS.slice(0, 30).flat(), ...CASE_PAIRS.slice(300, 330).flat()];
    const unit = fc.constantFrom(...letters, 'a', 'B', ' ', '*', '?', '[', ']', '^', '-', '\\', '\0', '\uffff');
    fc.assert(
      fc.property(
        fc.string({ unit, maxLength: 12 }),
        fc.string({ unit, minLength: 1, maxLength: 4 }),
        (value, sent) => {
          const found = glob(containsGlob(sent)).test(value.replaceAll('\0', '\uffff'));
          const expected = foldCase(value)
            .replaceAll('\0', '\uffff')
            .includes(foldCase(sent).replaceAll('\0', '\uffff'));
          expect(found).toBe(expected);
        },
      ),
      { numRuns: 3000 },
    );
    expect(containsGlob('Émi')).toBe('*[éÉ][mM][iI]*');
    expect(containsGlob('a*[b]?')).toBe('*[aA][*][[][bB][]][?]*');
    expect(containsGlob('θ')).toBe('*[θΘϴ]*');
    // At most 8 bytes a character, so MAX_CONTAINS characters stay far below GLOB's 50,000 bytes.
    const widest = Math.max(...CASE_PAIRS.map(([, lower]) => new TextEncoder().encode(containsGlob(lower)).length - 2));
    expect(widest).toBe(8);
    expect(MAX_CONTAINS * widest + 2).toBeLessThan(50_000);
  });

  it('the newest migration that folds in SQL holds exactly the SQL foldFrom generates', () => {
    const folding = readdirSync(migrations)
      .filter((name) => name.endsWith('.sql'))
      .sort()
      .filter((name) => /replace\((?!\))/.test(readFileSync(`${migrations}${name}`, 'utf8')));
    expect(folding.at(-1)).toBe('0012_unicode_case_fold.sql');
    const text = readFileSync(`${migrations}${folding.at(-1)}`, 'utf8');
    const [head, tail] = foldFrom('\u0001', 'value').split('\u0001') as [string, string];
    // Both triggers and the recomputation of the existing keys, and no other replace().
    expect(text.split(head).length - 1).toBe(3);
    expect(text.split(tail).length - 1).toBe(3);
    expect(text.match(/replace\((?!\))/g)).toHaveLength(3 * CASE_PAIRS.length);
  });
});

describe('contains in a query: a bounded value', () => {
  const catalog = catalogOf([
    { id: 1, version: 1, name: 'O', workspaceIds: [1], fields: [{ name: 'title', type: 'text' }] },
  ]);

  it(`refuses a contains value on text past ${MAX_CONTAINS} characters, at its pointer`, () => {
    const long = { field: 'title', op: 'contains', value: 'é'.repeat(MAX_CONTAINS + 1) };
    expect(parseQuery({ filter: { and: [{ field: 'name', op: 'contains', value: 'ok' }, long] } }, catalog)).toEqual({
      ok: false,
      problems: [
        {
          pointer: '/filter/and/1/value',
          code: 'invalid_length',
          message: `expected at most ${MAX_CONTAINS} characters`,
        },
      ],
    });
    const fits = { field: 'name', op: 'contains', value: '😀'.repeat(MAX_CONTAINS) };
    expect(parseQuery({ filter: { and: Array.from({ length: 50 }, () => fits) } }, catalog).ok).toBe(true);
  });
});
