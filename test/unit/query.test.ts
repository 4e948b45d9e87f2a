import { describe, expect, it } from 'vitest';
import { formDecode, queryOf } from '../../src/http/query.ts';

describe('queryOf: a query string, refusing what is not UTF-8', () => {
  it('decodes as URLSearchParams does when the bytes are UTF-8', () => {
    const url = 'http://x/p?a=1&b=caf%C3%A9+au+lait&c=100%&d&&e=%F0%9F%98%80&a=2';
    const { params, problems } = queryOf(url);
    expect(problems).toEqual([]);
    expect([...params]).toEqual([...new URL(url).searchParams]);
  });

  it('names each parameter whose name or value is not UTF-8 once decoded, instead of searching for U+FFFD', () => {
    const { params, problems } = queryOf('http://x/p?field.name=%ED%A0%80&limit=5&%FF=1&cursor=a%C3');
    expect(problems).toEqual([
      { query: 'field.name', code: 'invalid_encoding', message: 'not valid UTF-8 once percent-decoded' },
      { query: '%FF', code: 'invalid_encoding', message: 'not valid UTF-8 once percent-decoded' },
      { query: 'cursor', code: 'invalid_encoding', message: 'not valid UTF-8 once percent-decoded' },
    ]);
    expect([...params]).toEqual([['limit', '5']]);
  });

  it('formDecode: + is a space, a stray % stays', () => {
    expect(formDecode('a+b%20c%')).toBe('a b c%');
    expect(formDecode('%e2%82%ac')).toBe('€');
    expect(formDecode('%e2%82')).toBeUndefined();
  });
});
