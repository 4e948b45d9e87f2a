import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { characters } from '../../src/core/characters.ts';
import { maxChars, maxCharsAsJsonSchema } from '../../src/schemas/max-chars.ts';
import { EntityName } from '../../src/schemas/common.ts';
import { ObjectDefinitionInput } from '../../src/schemas/admin.ts';
import { shapeProblems } from '../../src/schemas/parse.ts';
import { isEmail, isHttpUrl } from '../../src/domain/field-types.ts';

const emoji = '😀'; // two UTF-16 units, one code point

describe('lengths count Unicode code points', () => {
  it('characters: a surrogate pair is one, a lone half is one', () => {
    expect(characters(emoji.repeat(3))).toBe(3);
    expect(characters('a\ud800b')).toBe(3);
    expect(characters('')).toBe(0);
  });

  it('an admin name of 200 emoji is taken, 201 refused', () => {
    expect(shapeProblems(EntityName, emoji.repeat(200))).toEqual([]);
    expect(shapeProblems(v.object({ name: EntityName }), { name: emoji.repeat(201) })).toEqual([
      { pointer: '/name', code: 'invalid_length', message: 'expected length <=200' },
    ]);
  });

  it('options and name templates count the same way', () => {
    const definition = (option: string, nameTemplate: string) => ({
      name: 'x',
      workspaceIds: [1],
      nameTemplate,
      fields: [{ name: 'f', type: 'select', options: [option] }],
    });
    expect(shapeProblems(ObjectDefinitionInput, definition(emoji.repeat(200), emoji.repeat(10_000)))).toEqual([]);
    expect(
      shapeProblems(ObjectDefinitionInput, definition(emoji.repeat(201), emoji.repeat(10_001))).map((p) => p.pointer),
    ).toEqual(['/nameTemplate', '/fields/0/options/0']);
  });

  it('email and URL bounds count code points too', () => {
    expect(isEmail(`${emoji.repeat(64)}@${emoji.repeat(189)}`)).toBe(true);
    expect(isEmail(`${emoji.repeat(65)}@x`)).toBe(false);
    expect(isHttpUrl(`https://h/${emoji.repeat(8000)}`)).toBe(true);
  });

  it('is documented as JSON Schema maxLength', () => {
    const schema = toJsonSchema(v.pipe(v.string(), maxChars(5)), {
      errorMode: 'ignore',
      overrideAction: maxCharsAsJsonSchema as never,
    });
    expect(schema).toMatchObject({ type: 'string', maxLength: 5 });
  });
});
