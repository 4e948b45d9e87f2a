import { describe, expect, it } from 'vitest';
import { CACHE_TTL_MS, Expiring } from '../../src/storage/isolate-cache.ts';

describe('Expiring: what an isolate remembers', () => {
  it('keeps the stated bound: at most the 60 s allowed', () => {
    expect(CACHE_TTL_MS).toBeLessThanOrEqual(60_000);
  });

  it('answers an entry until its time is up, then forgets it', () => {
    let now = 1_000;
    const cache = new Expiring<string, number>(100, 10, () => now);
    cache.set('a', 1);
    now += 99;
    expect(cache.get('a')).toBe(1);
    now += 1;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('restarts the time of an entry stored again', () => {
    let now = 0;
    const cache = new Expiring<string, number>(100, 10, () => now);
    cache.set('a', 1);
    now = 80;
    cache.set('a', 2);
    now = 150;
    expect(cache.get('a')).toBe(2);
  });

  it('drops the least recently used entries past its capacity', () => {
    const cache = new Expiring<number, number>(1_000, 3, () => 0);
    for (const n of [1, 2, 3, 4]) cache.set(n, n);
    expect(cache.get(1)).toBeUndefined();
    expect(cache.get(2)).toBe(2);
    cache.set(5, 5);
    expect([2, 3, 4, 5].map((n) => cache.get(n))).toEqual([2, undefined, 4, 5]);
  });

  it('does not make an entry live longer by using it', () => {
    let now = 0;
    const cache = new Expiring<string, number>(100, 10, () => now);
    cache.set('a', 1);
    now = 60;
    expect(cache.get('a')).toBe(1);
    now = 100;
    expect(cache.get('a')).toBeUndefined();
  });
});
