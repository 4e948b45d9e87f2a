import { describe, expect, it } from 'vitest';
import { allFailed, FAILING_START, parseImportQuery, statusAfterChunk } from '../../src/domain/imports.ts';

describe("an import's status says what happened to its rows", () => {
  it('is failed when every row failed, and gives up once its first 1,000 rows all failed', () => {
    expect(statusAfterChunk({ processed: 560, failed: 560 }, true)).toBe('failed');
    expect(statusAfterChunk({ processed: 560, failed: 559 }, true)).toBe('succeeded');
    expect(statusAfterChunk({ processed: 0, failed: 0 }, true)).toBe('succeeded');
    expect(statusAfterChunk({ processed: FAILING_START - 100, failed: FAILING_START - 100 }, false)).toBe('running');
    expect(statusAfterChunk({ processed: FAILING_START, failed: FAILING_START }, false)).toBe('failed');
    expect(statusAfterChunk({ processed: FAILING_START, failed: FAILING_START - 1 }, false)).toBe('running');
  });

  it('says why: the problem most rows had, with its column, or its pointer when every such row had the same', () => {
    const date = { pointer: '/fieldValues/0/value', column: 'date', code: 'invalid_value', message: 'expected a date' };
    const rows = [
      { errors: [date, { ...date, pointer: '/fieldValues/1/value', column: 'price', message: 'expected number' }] },
      { errors: [{ ...date, pointer: '/fieldValues/2/value' }] },
      { errors: [{ pointer: '', code: 'invalid_row', message: 'expected 3 cells, found 2' }] },
    ];
    expect(allFailed(rows, true)).toBe(
      'All 3 rows failed. Most common problem (2 of them): expected a date (invalid_value) in column "date".',
    );
    const unknown = { pointer: '/name', code: 'unknown_property', message: 'unknown property' };
    expect(allFailed([{ errors: [unknown] }, { errors: [unknown] }], false)).toBe(
      'The first 2 rows all failed, so the rest of the file was not read. ' +
        'Most common problem (2 of them): unknown property (unknown_property) at /name.',
    );
  });
});

describe('import modes', () => {
  const parse = (query: string) => parseImportQuery(new URLSearchParams(query));

  it('an update matches on id, by default; it names no other field', () => {
    expect(parse('objectId=3&mode=update')).toEqual({
      ok: true,
      value: { objectId: 3, mode: 'update', matchOn: 'id' },
    });
    expect(parse('objectId=3&mode=update&matchOn=id').ok).toBe(true);
    expect(parse('objectId=3&mode=update&matchOn=email')).toMatchObject({
      ok: false,
      problems: [{ query: 'matchOn', code: 'invalid_value' }],
    });
    expect(parse('objectId=3&mode=merge')).toMatchObject({ ok: false, problems: [{ query: 'mode' }] });
    expect(parse('objectId=3&matchOn=id')).toMatchObject({ ok: false, problems: [{ code: 'not_allowed' }] });
  });
});
