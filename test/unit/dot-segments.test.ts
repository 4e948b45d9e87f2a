import { describe, expect, it } from 'vitest';
import { hasDotSegments } from '../../src/http/dot-segments.ts';

describe('hasDotSegments: read on the URL text, before a parser resolves it', () => {
  it('finds . and .. segments, plain or percent-encoded in any case, with / or \\', () => {
    for (const url of [
      'http://h/workspaces/%2e%2e/records/5',
      'http://h/x/%2E%2e/admin/users',
      'http://h/x/../admin',
      'http://h/a/./b',
      'http://h/a/.%2e/b',
      'http://h/a/%2e./b',
      'http://h/a/%2e',
      'http://h/a\\..\\b',
      'https://h:8443/..?x=1',
    ]) {
      expect(hasDotSegments(url), url).toBe(true);
    }
  });

  it('leaves dots inside segments, in the query and in the host alone', () => {
    for (const url of [
      'http://h/records/5',
      'http://a.b.c/x',
      'http://h/openapi.json',
      'http://h/a/...',
      'http://h/a/%2e%2e%2e',
      'http://h/a/b..c',
      'http://h/a?x=../..',
      'http://h/a#/../b',
    ]) {
      expect(hasDotSegments(url), url).toBe(false);
    }
  });
});
