import { describe, expect, it } from 'vitest';
import { fallbackName } from '../../src/domain/name.ts';
import { fallbackKeys, foldsOf, recordKeys, searchTerms } from '../../src/domain/record-keys.ts';
import { searchPlan, PLAN_CAP, type CountStatement } from '../../src/storage/search-plan.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

describe('the keys a record carries', () => {
  it("terms: the whole name, each whole word, each word's first 1 to 3 letters, once each", () => {
    expect(searchTerms(['ann', 'smith'])).toEqual(['~ann smith', '=ann', 'a', 'an', 'ann', '=smith', 's', 'sm', 'smi']);
    expect(searchTerms(['ab', 'ab'])).toEqual(['~ab ab', '=ab', 'a', 'ab']);
    expect(searchTerms([])).toEqual([]);
    // Letters, not UTF-16 units: a word beyond the BMP is cut between its code points.
    expect(searchTerms(['𐐨𐐯𐑅𐑅'])).toEqual(['~𐐨𐐯𐑅𐑅', '=𐐨𐐯𐑅𐑅', '𐐨', '𐐨𐐯', '𐐨𐐯𐑅']);
    // A whole name longer than a search can be is no term; a long word's term keeps 201 letters.
    const long = 'x'.repeat(300);
    expect(searchTerms([long])).toEqual([`=${'x'.repeat(201)}`, 'x', 'xx', 'xxx']);
  });

  it('folds: only where full case folding differs from SQLite lower(), the name under "#"', () => {
    expect(foldsOf('Ann Smith', [fv('note', 'ASCII only'), fv('n', 3)])).toBe('{}');
    expect(JSON.parse(foldsOf('Émile', [fv('note', 'STRASSE'), fv('city', 'MÜNCHEN'), fv('tags', ['Ä'])]))).toEqual({
      '#': 'émile',
      city: 'münchen',
    });
    // Lower case already: lower() leaves it as folding does.
    expect(foldsOf('émile', [fv('note', 'straße')])).toBe(JSON.stringify({ note: 'strasse' }));
  });

  it("a fallback name's keys are the object name's, completed around the id as storage does", () => {
    const values = [fv('note', 'ÖL')];
    for (const objectName of ['ÉCOLE Générale', "Don't Stráße", 'Room 7', '東京タワー']) {
      const parts = fallbackKeys(objectName, values);
      const whole = recordKeys(fallbackName(objectName, 42), values);
      expect(`${parts.words} 42${parts.runs}`.trimStart()).toBe(whole.nameKey);
      const terms = new Set([...JSON.parse(parts.terms), '=42', '4', '42', `~${parts.whole} 42`.trimStart()]);
      expect([objectName, new Set(JSON.parse(whole.terms))]).toEqual([objectName, terms]);
      const folds = {
        ...JSON.parse(parts.folds),
        ...(parts.nameFold === null ? {} : { '#': `${parts.nameFold} #42` }),
      };
      expect(JSON.parse(whole.folds)).toEqual(folds);
    }
    expect(fallbackKeys('Contact', []).nameFold).toBeNull();
  });

  it("the whole name's term is its runs, as a search splits its text", () => {
    expect(JSON.parse(recordKeys("Don't", []).terms)).toContain('~don t');
    expect(JSON.parse(recordKeys('Pi 3.14', []).terms)).toContain('~pi 3 14');
  });
});

describe('how a search walks the terms', () => {
  const plan = (words: string[], counts: Record<string, number>) => {
    const asked: CountStatement[][] = [];
    return searchPlan(words, async (statements) => {
      asked.push(statements);
      return statements.map((s) => counts[s.params.join('..')] ?? 0);
    }).then((p) => ({ ...p, asked: asked.flat().map((s) => s.params.join('..')) }));
  };

  it('one short word: its own term, nothing counted', async () => {
    const p = await plan(['an'], {});
    expect(p.tiers).toEqual([
      { kind: 'term', term: '~an' },
      { kind: 'term', term: '=an' },
      { kind: 'term', term: 'an' },
    ]);
    expect(p.asked).toEqual([]);
    expect(p.few).toBe(false);
  });

  it('a long word: the range of whole words when few hold one, else its first letters', async () => {
    const rare = await plan(['zyxw'], { '=zyxw..=zyxw\u{10FFFF}': 1 });
    expect(rare.all).toEqual({ kind: 'range', from: '=zyxw', to: '=zyxw\u{10FFFF}' });
    expect(rare.few).toBe(true);
    const common = await plan(['smith'], { '=smith..=smith\u{10FFFF}': PLAN_CAP });
    expect(common.all).toEqual({ kind: 'term', term: 'smi' });
    expect(common.few).toBe(false);
  });

  it('several words: the rarest drives each tier', async () => {
    const p = await plan(['ann1', 'smith'], {
      '=ann1': 5,
      '=smith': 90,
      '=ann1..=ann1\u{10FFFF}': 7,
      '=smith..=smith\u{10FFFF}': 100,
    });
    expect(p.tiers).toEqual([
      { kind: 'term', term: '~ann1 smith' },
      { kind: 'term', term: '=ann1' },
      { kind: 'range', from: '=ann1', to: '=ann1\u{10FFFF}' },
    ]);
    expect(p.asked.length).toBe(4);
  });
});
