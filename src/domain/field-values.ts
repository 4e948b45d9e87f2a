import type { InputProblem } from '../http/errors.ts';
import type { FieldValueOut } from '../schemas/record.ts';
import { pointer } from '../schemas/parse.ts';
import type { ObjectDef } from './definition.ts';
import { checkValue } from './field-types.ts';

export interface FieldValuesResult {
  /** One entry per field that has a value: the definition's order, then fields it no longer has. */
  values: FieldValueOut[];
  problems: InputProblem[];
}

/**
 * Applies `changes` on top of `current` (CONTRACT §5, §6): a listed field takes its new value,
 * an omitted one keeps its value, `null` removes it. On create (`current` empty) every required
 * field must end with a value; on patch only an explicit `null` can empty a required field.
 * `prefix` is the pointer of the element (`/3` in a batch, `` for a single body).
 */
export function applyFieldValues(
  def: ObjectDef,
  current: readonly FieldValueOut[],
  changes: readonly FieldValueOut[],
  prefix: string,
  mode: 'create' | 'patch',
): FieldValuesResult {
  const fields = new Map(def.fields.map((field) => [field.name, field]));
  const values = new Map(current.map((entry) => [entry.fieldName, entry.value]));
  const problems: InputProblem[] = [];
  changes.forEach(({ fieldName, value }, index) => {
    const field = fields.get(fieldName);
    if (field === undefined) {
      problems.push(problem(pointer(prefix, 'fieldValues', index, 'fieldName'), 'unknown_field', 'not a field of the object'));
      return;
    }
    if (value === null) {
      if (field.required === true) {
        problems.push(problem(pointer(prefix, 'fieldValues', index, 'value'), 'required', `${fieldName} is required`));
      }
      values.delete(fieldName);
      return;
    }
    const wrong = checkValue(field, value);
    if (wrong !== undefined) problems.push(problem(pointer(prefix, 'fieldValues', index, 'value'), wrong.code, wrong.message));
    values.set(fieldName, value);
  });
  if (mode === 'create') {
    for (const field of def.fields) {
      if (field.required === true && !values.has(field.name)) {
        problems.push(problem(pointer(prefix, 'fieldValues'), 'required', `${field.name} is required`));
      }
    }
  }
  return { values: ordered(def, current, values), problems };
}

function ordered(def: ObjectDef, current: readonly FieldValueOut[], values: Map<string, unknown>): FieldValueOut[] {
  const known = new Set(def.fields.map((field) => field.name));
  const names = [...def.fields.map((field) => field.name), ...current.map((e) => e.fieldName).filter((n) => !known.has(n))];
  return names.filter((name) => values.has(name)).map((name) => ({ fieldName: name, value: values.get(name) }));
}

function problem(at: string, code: string, message: string): InputProblem {
  return { pointer: at, code, message, status: 422 };
}
