import { describe, expect, it } from 'vitest';
import { isBookmark, latestBookmark, sessionStart } from '../../src/http/bookmark.ts';

const at = (n: number): string => `00000000-${n.toString(16).padStart(8, '0')}-00000000-${'0'.repeat(32)}`;

describe('D1 bookmarks', () => {
  it('accepts only the shape D1 writes', () => {
    expect(isBookmark('00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683')).toBe(true);
    for (const bad of [
      '',
      'first-primary',
      'first-unconstrained',
      '00000085-0000024C-00004C6D-8E61117BF38D7ADB71B934EBBF891683',
      `${at(1)} `,
      at(1).slice(1),
    ])
      expect(isBookmark(bad), bad).toBe(false);
  });

  it('starts a read at the bookmark sent, else anywhere; a write on the primary whatever was sent', () => {
    expect(sessionStart('GET', '/records/1', null)).toBe('first-unconstrained');
    expect(sessionStart('GET', '/records/1', at(7))).toBe(at(7));
    expect(sessionStart('HEAD', '/records/1', at(7))).toBe(at(7));
    expect(sessionStart('GET', '/records/1', 'garbage')).toBe('first-unconstrained');
    for (const method of ['POST', 'PATCH', 'PUT', 'DELETE'])
      expect(sessionStart(method, '/records/batch', at(7))).toBe('first-primary');
    // A query is a read sent by POST: it reads where a GET would.
    expect(sessionStart('POST', '/workspaces/3/records/query', null)).toBe('first-unconstrained');
    expect(sessionStart('POST', '/workspaces/3/records/query', at(7))).toBe(at(7));
    expect(sessionStart('POST', '/objects/3/records/upsert', at(7))).toBe('first-primary');
    // This isolate's last revocation is a floor: no read here starts before it.
    expect(sessionStart('GET', '/records/1', null, at(9))).toBe(at(9));
    expect(sessionStart('GET', '/records/1', at(7), at(9))).toBe(at(9));
    expect(sessionStart('GET', '/records/1', at(11), at(9))).toBe(at(11));
    expect(sessionStart('PATCH', '/records/1', null, at(9))).toBe('first-primary');
  });

  it('picks the newest in history order, ignoring what is not a bookmark', () => {
    expect(latestBookmark(at(9), at(10), null, undefined, 'zzz')).toBe(at(10));
    expect(latestBookmark(at(0x100), at(0xff))).toBe(at(0x100));
    expect(latestBookmark(null, undefined)).toBeUndefined();
  });
});
