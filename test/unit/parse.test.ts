import { describe, expect, it } from 'vitest';
import { CreateItem } from '../../src/schemas/record.ts';
import { duplicateProblems, parseBatch, pointer } from '../../src/schemas/parse.ts';

const item = { objectId: 1, fieldValues: [] };
const none = () => [];

describe('batch-level checks', () => {
  it('checks the length before the items (Valibot would skip it when an item fails)', () => {
    const bad = Array.from({ length: 21 }, () => ({ objectId: 'x' }));
    expect(parseBatch(CreateItem, bad, none)).toEqual({
      ok: false,
      problems: [{ pointer: '', code: 'invalid_length', message: 'expected 1 to 20 elements' }],
    });
    expect(parseBatch(CreateItem, [], none).ok).toBe(false);
    expect(parseBatch(CreateItem, {}, none)).toEqual({
      ok: false,
      problems: [{ pointer: '', code: 'invalid_type', message: 'expected an array' }],
    });
    expect(
      parseBatch(
        CreateItem,
        Array.from({ length: 20 }, () => item),
        none,
      ).ok,
    ).toBe(true);
  });
  it('reports the problems of every element, then the extra checks', () => {
    const result = parseBatch(CreateItem, [{ objectId: 1 }, item, { fieldValues: [], objectId: -2 }], () => [
      { pointer: '/1', code: 'x', message: 'm' },
    ]);
    expect(result).toEqual({
      ok: false,
      problems: [
        { pointer: '/0/fieldValues', code: 'required', message: 'fieldValues is required' },
        { pointer: '/2/objectId', code: 'out_of_range', message: 'expected >=0' },
        { pointer: '/1', code: 'x', message: 'm' },
      ],
    });
  });
  it('finds repeated keys, ignoring elements that are not objects', () => {
    expect(duplicateProblems([{ id: 1 }, 'x', { id: 2 }, { id: 1 }, { id: 1 }], 'id', '')).toEqual([
      { pointer: '/3/id', code: 'duplicate', message: 'id appears more than once' },
      { pointer: '/4/id', code: 'duplicate', message: 'id appears more than once' },
    ]);
    expect(duplicateProblems('nope', 'id', '')).toEqual([]);
  });
  it('lists every unknown property of an object, not only the first, at any depth', () => {
    const unknown = (at: string) => ({ pointer: at, code: 'unknown_property', message: 'unknown property' });
    const result = parseBatch(
      CreateItem,
      [
        { ...item, colour: 'red', size: 2 },
        { objectId: 1, fieldValues: [{ fieldName: 'a', value: 1, extra: 1, more: 2 }], isTemplate: 'no', x: 1 },
      ],
      none,
    );
    expect(result.ok ? [] : result.problems).toEqual([
      unknown('/0/colour'),
      unknown('/0/size'),
      unknown('/1/fieldValues/0/extra'),
      unknown('/1/fieldValues/0/more'),
      { pointer: '/1/isTemplate', code: 'invalid_type', message: 'expected boolean' },
      unknown('/1/x'),
    ]);
  });
  it('escapes JSON pointer segments (RFC 6901)', () => {
    expect(pointer('/0', 'a/b', 'c~d', 2)).toBe('/0/a~1b/c~0d/2');
  });
});
