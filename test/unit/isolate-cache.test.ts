import { describe, expect, it } from 'vitest';
import { CACHE_TTL_MS, Expiring, IsolateCache } from '../../src/storage/isolate-cache.ts';

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

describe('a revocation is never undone by a read that was in flight', () => {
  it('a fill issued before a revocation is ignored; one issued after it is remembered', () => {
    const now = 0;
    const cache = new Expiring<string, number>(100, 10, () => now);
    const before = cache.issue();
    cache.revoke('a');
    cache.set('a', 1, before); // D1 answered before the revocation, the reply came after
    expect(cache.get('a')).toBeUndefined();
    const after = cache.issue();
    cache.set('a', 2, after);
    expect(cache.get('a')).toBe(2);
  });

  it('holds even when the clock did not move between the read and the revocation', () => {
    const cache = new Expiring<string, number>(100, 10, () => 5);
    const before = cache.issue();
    cache.revoke('a');
    cache.set('a', 1, before);
    expect(cache.get('a')).toBeUndefined();
  });

  it('forgets a revocation once every read issued before it has expired anyway', () => {
    let now = 0;
    const cache = new Expiring<string, number>(100, 10, () => now);
    const before = cache.issue();
    cache.revoke('a');
    now = 100;
    cache.set('a', 1, before); // expired on arrival
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', 2);
    expect(cache.get('a')).toBe(2);
  });

  it(
    "IsolateCache: a removed member's callers, remembered or in flight, are read afresh; other users " +
      'are untouched',
    () => {
      const cache = new IsolateCache();
      const caller = (userId: number) => ({ userId, roles: new Map([[1, 'editor' as const]]) });
      cache.rememberCaller('k1', caller(7), cache.issue());
      cache.rememberCaller('k9', caller(9), cache.issue());
      const inFlight = cache.issue();
      cache.revokeUser(7);
      expect(cache.callers.get('k1')).toBeUndefined();
      cache.rememberCaller('k2', caller(7), inFlight); // another key of the same user, read before
      expect(cache.callers.get('k2')).toBeUndefined();
      expect(cache.callers.get('k9')).toEqual(caller(9));
      cache.rememberCaller('k1', caller(7), cache.issue());
      expect(cache.callers.get('k1')).toEqual(caller(7));
      const late = cache.issue();
      cache.revokeKey('k1');
      cache.rememberCaller('k1', caller(7), late);
      expect(cache.callers.get('k1')).toBeUndefined();
    },
  );
});
