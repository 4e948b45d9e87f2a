import { describe, expect, it } from 'vitest';
import { pastPrefix } from '../../src/core/characters.ts';

describe('pastPrefix', () => {
  it('is the least text past every text with the prefix, in code point order', () => {
    expect(pastPrefix('c1')).toBe('c2');
    expect(pastPrefix('zulu-')).toBe('zulu.');
    expect(pastPrefix('é')).toBe('ê');
    expect(pastPrefix('a\u{d7ff}')).toBe('a\u{e000}');
    expect(pastPrefix('a🛫')).toBe('a🛬');
    expect(pastPrefix('a\u{10ffff}')).toBe('b');
    expect(pastPrefix('\u{10ffff}\u{10ffff}')).toBeUndefined();
  });

  it('bounds exactly the texts that start with the prefix', () => {
    const texts = ['c', 'c1', 'c10', 'c1\u{10ffff}x', 'c2', 'c0', 'd', 'c1🛫', 'b\u{10ffff}'];
    const utf8 = (t: string) => Buffer.from(t, 'utf8');
    for (const prefix of ['c1', 'c', 'b\u{10ffff}']) {
      const past = pastPrefix(prefix);
      const inRange = texts.filter(
        (t) =>
          Buffer.compare(utf8(t), utf8(prefix)) >= 0 && (past === undefined || Buffer.compare(utf8(t), utf8(past)) < 0),
      );
      expect(inRange.sort()).toEqual(texts.filter((t) => t.startsWith(prefix)).sort());
    }
  });
});
