import { describe, expect, it } from 'vitest';
import type { ObjectDef } from '../../src/domain/definition.ts';
import { applyFieldValues } from '../../src/domain/field-values.ts';

const def: ObjectDef = {
  id: 1,
  version: 2,
  name: 'Contact',
  workspaceIds: [1],
  fields: [
    { name: 'first', type: 'text', required: true },
    { name: 'last', type: 'text' },
    { name: 'age', type: 'integer' },
  ],
};
const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

describe('applyFieldValues', () => {
  it('orders values as the definition does', () => {
    const { values, problems } = applyFieldValues(def, [], [fv('age', 3), fv('first', 'A')], '/0', 'create');
    expect(problems).toEqual([]);
    expect(values).toEqual([fv('first', 'A'), fv('age', 3)]);
  });
  it('merges by fieldName: listed fields change, omitted ones stay, null removes', () => {
    const current = [fv('first', 'A'), fv('last', 'B'), fv('age', 3)];
    const { values, problems } = applyFieldValues(def, current, [fv('last', null), fv('age', 4)], '', 'patch');
    expect(problems).toEqual([]);
    expect(values).toEqual([fv('first', 'A'), fv('age', 4)]);
  });
  it('keeps values of fields a newer definition dropped, after the known ones', () => {
    const { values } = applyFieldValues(def, [fv('legacy', 1), fv('first', 'A')], [fv('age', 1)], '', 'patch');
    expect(values).toEqual([fv('first', 'A'), fv('age', 1), fv('legacy', 1)]);
  });
  it('reports unknown fields, wrong types and required fields with pointers and 422', () => {
    const { problems } = applyFieldValues(def, [], [fv('nick', 'x'), fv('age', '3')], '/4', 'create');
    expect(problems).toEqual([
      {
        pointer: '/4/fieldValues/0/fieldName',
        code: 'unknown_field',
        message: 'not a field of the object',
        status: 422,
      },
      { pointer: '/4/fieldValues/1/value', code: 'invalid_type', message: 'expected integer', status: 422 },
      { pointer: '/4/fieldValues', code: 'required', message: 'first is required', status: 422 },
    ]);
  });
  it('on patch, refuses null on a required field but tolerates one that was already missing', () => {
    expect(applyFieldValues(def, [fv('first', 'A')], [fv('first', null)], '', 'patch').problems).toEqual([
      { pointer: '/fieldValues/0/value', code: 'required', message: 'first is required', status: 422 },
    ]);
    expect(applyFieldValues(def, [fv('last', 'B')], [fv('age', 1)], '', 'patch').problems).toEqual([]);
  });
  it('on create, lists a required field sent as null once, at its value (not again as missing)', () => {
    expect(applyFieldValues(def, [], [fv('first', null), fv('age', 1)], '/2', 'create').problems).toEqual([
      { pointer: '/2/fieldValues/0/value', code: 'required', message: 'first is required', status: 422 },
    ]);
  });
});
