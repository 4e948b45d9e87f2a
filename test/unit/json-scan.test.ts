import { describe, expect, it } from 'vitest';
import { MAX_BODY_DEPTH, numberProblem, scanJson } from '../../src/core/json-scan.ts';
import { isJsonUtf8 } from '../../src/http/body.ts';

const nested = (levels: number, inner = '1'): string => '['.repeat(levels) + inner + ']'.repeat(levels);

describe('scanJson: I-JSON and depth, without recursion', () => {
  it('accepts what JSON.parse accepts and finds nothing in ordinary JSON', () => {
    for (const text of [
      '1',
      ' {"a":[1,2,{"b":null}],"c":"x\\"y\\u00e9"} ',
      '[]',
      '{}',
      '[[],{}]',
      '-0',
      '0.5e-3',
      '"\\ud83d\\ude00"',
      nested(MAX_BODY_DEPTH),
    ]) {
      expect(JSON.parse(text) === undefined).toBe(false);
      expect(scanJson(text), text).toEqual({ ok: true, problems: [] });
    }
  });

  it('says malformed for what JSON.parse refuses', () => {
    for (const text of [
      '',
      '[',
      '{"a"}',
      '{"a":1,}',
      '[1,]',
      '01',
      '1.',
      '.5',
      '+1',
      'tru',
      '"\u0001"',
      '"\\x"',
      '"\\u12"',
      '{"a":1}x',
      '[1 2]',
      "{'a':1}",
      'NaN',
      '{,}',
      '[,1]',
    ]) {
      expect(() => JSON.parse(text), text).toThrow();
      expect(scanJson(text), text).toEqual({ ok: false });
    }
  });

  it('refuses nesting deeper than the bound at the first container past it, however deep the text goes', () => {
    expect(scanJson(nested(MAX_BODY_DEPTH + 1)).ok && scanJson(nested(MAX_BODY_DEPTH + 1))).toEqual({
      ok: true,
      problems: [{ pointer: '/0'.repeat(MAX_BODY_DEPTH), code: 'too_deep', message: 'nested deeper than 100 levels' }],
    });
    const deep = '{"a":' + nested(200_000) + '}';
    const scan = scanJson(deep);
    expect(scan.ok && scan.problems.map((p) => p.code)).toEqual(['too_deep']);
    expect(scanJson('{"a":{"b":[1,{"c":[]}]}}', 4)).toEqual({
      ok: true,
      problems: [{ pointer: '/a/b/1/c', code: 'too_deep', message: 'nested deeper than 4 levels' }],
    });
  });

  it('finds a member name repeated in one object, however it is escaped, with its pointer', () => {
    expect(scanJson('{"objectId":999999,"objectId":1}')).toEqual({
      ok: true,
      problems: [
        { pointer: '/objectId', code: 'duplicate', message: 'member name appears more than once in this object' },
      ],
    });
    const scan = scanJson('[{"a":1},{"x":{"a/b":1,"a\\/b":2}},{"a":1,"b":{"a":2}}]');
    expect(scan.ok && scan.problems.map((p) => p.pointer)).toEqual(['/1/x/a~1b']);
  });

  it('finds numbers a double cannot hold as written, wherever they are', () => {
    const scan = scanJson(
      '{"a":1e400,"b":[-1e309,1e-400,9007199254740993,-18446744073709551617],"c":{"d":0.000e-999}}',
    );
    expect(scan.ok && scan.problems).toEqual([
      { pointer: '/a', code: 'invalid_number', message: 'number out of range' },
      { pointer: '/b/0', code: 'invalid_number', message: 'number out of range' },
      { pointer: '/b/1', code: 'invalid_number', message: 'number underflows to 0' },
      { pointer: '/b/2', code: 'invalid_number', message: 'integer beyond ±2^53 cannot be held exactly' },
      { pointer: '/b/3', code: 'invalid_number', message: 'integer beyond ±2^53 cannot be held exactly' },
    ]);
  });

  it('numberProblem: the edges of what a double holds', () => {
    const check = (literal: string) => {
      const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.exec(literal);
      return m && numberProblem(literal, m[1] ?? '', m[2], m[3]);
    };
    for (const fine of [
      '9007199254740992',
      '-9007199254740992',
      '9007199254740993.0',
      '9.007199254740993e15',
      '1.7e308',
      '1.7976931348623157e308',
      '5e-324',
      '0e-999',
      '-0',
      '0.0',
    ]) {
      expect(check(fine), fine).toBeUndefined();
    }
    expect(check('1.8e308')).toBe('number out of range');
    expect(check('2e-324')).toBe('number underflows to 0');
    expect(check('12345678901234567890')).toBe('integer beyond ±2^53 cannot be held exactly');
  });
});

describe('isJsonUtf8: the Content-Type of a body', () => {
  it('takes application/json with or without a utf-8 charset, in any case', () => {
    for (const type of [
      'application/json',
      'Application/JSON',
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'application/json; charset="utf-8"',
      'application/json; foo=bar',
    ]) {
      expect(isJsonUtf8(type), type).toBe(true);
    }
  });

  it('refuses another charset or media type', () => {
    for (const type of [
      'application/json; charset=latin1',
      'application/json; charset=UTF-16',
      'application/json; charset=utf8',
      'application/json; charset',
      'text/json',
      '',
      'application/jsonx',
    ]) {
      expect(isJsonUtf8(type), type).toBe(false);
    }
  });
});
