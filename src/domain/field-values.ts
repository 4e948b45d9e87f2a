import { pointer, type InputProblem } from '../core/problem.ts';
import type { FieldValueOut } from '../schemas/record.ts';
import type { ObjectDef } from './definition.ts';
import { checkValue } from './field-types.ts';

/** A record's field values serialize to at most this many bytes (1 MiB; D1 rows hold 2 MB); more is 422. */
export const MAX_RECORD_BYTES = 1024 * 1024;

export interface FieldValuesResult {
  /** One entry per field that has a value: the definition's order, then fields it no longer has. */
  values: FieldValueOut[];
  problems: InputProblem[];
}

/**
 * Applies `changes` on top of `current`: a listed field takes its new value,
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
  // A required field sent as null is listed there, at its value: not again as missing.
  const emptied = new Set<string>();
  changes.forEach(({ fieldName, value }, index) => {
    const field = fields.get(fieldName);
    if (field === undefined) {
      problems.push(
        problem(pointer(prefix, 'fieldValues', index, 'fieldName'), 'unknown_field', 'not a field of the object'),
      );
      return;
    }
    if (field.type === 'formula' || field.type === 'lookup' || field.type === 'rollup') {
      const what = {
        formula: 'computed',
        lookup: 'read from the record it references',
        rollup: 'kept from the records referencing this one',
      }[field.type];
      problems.push(problem(pointer(prefix, 'fieldValues', index), 'read_only_field', `${fieldName} is ${what}`));
      return;
    }
    if (value === null) {
      if (field.required === true) {
        problems.push(problem(pointer(prefix, 'fieldValues', index, 'value'), 'required', `${fieldName} is required`));
        emptied.add(fieldName);
      }
      values.delete(fieldName);
      return;
    }
    const wrong = checkValue(field, value);
    if (wrong !== undefined)
      problems.push(problem(pointer(prefix, 'fieldValues', index, 'value'), wrong.code, wrong.message));
    values.set(fieldName, value);
  });
  if (mode === 'create') {
    for (const field of def.fields) {
      if (field.required === true && !values.has(field.name) && !emptied.has(field.name)) {
        problems.push(problem(pointer(prefix, 'fieldValues'), 'required', `${field.name} is required`));
      }
    }
  }
  const result = ordered(def, current, values);
  const tooLarge = problems.length === 0 ? sizeProblem(result, prefix) : undefined;
  if (tooLarge !== undefined) problems.push(tooLarge);
  return { values: result, problems };
}

/** 422 when a record's values (its formulas' included) would pass MAX_RECORD_BYTES. */
export function sizeProblem(values: readonly FieldValueOut[], prefix: string): InputProblem | undefined {
  return serializedBytes(values) > MAX_RECORD_BYTES
    ? problem(
        pointer(prefix, 'fieldValues'),
        'record_too_large',
        `the record's field values exceed ${MAX_RECORD_BYTES} bytes`,
      )
    : undefined;
}

/** UTF-8 size of the values as stored; encoding is skipped when even 3 bytes a unit would fit. */
export function serializedBytes(values: readonly FieldValueOut[]): number {
  const text = JSON.stringify(values);
  return text.length * 3 <= MAX_RECORD_BYTES ? text.length : new TextEncoder().encode(text).byteLength;
}

/** Whether two lists hold the same value for every field, whatever their order: such a patch changes nothing. */
export function sameValues(a: readonly FieldValueOut[], b: readonly FieldValueOut[]): boolean {
  if (a.length !== b.length) return false;
  const before = new Map(a.map((entry) => [entry.fieldName, JSON.stringify(entry.value)]));
  return b.every((entry) => before.get(entry.fieldName) === JSON.stringify(entry.value));
}

/** `values` in the definition's order, then fields it no longer has in their order in `current`. */
export function ordered(
  def: ObjectDef,
  current: readonly FieldValueOut[],
  values: ReadonlyMap<string, unknown>,
): FieldValueOut[] {
  const known = new Set(def.fields.map((field) => field.name));
  const names = [
    ...def.fields.map((field) => field.name),
    ...current.map((e) => e.fieldName).filter((n) => !known.has(n)),
  ];
  return names.filter((name) => values.has(name)).map((name) => ({ fieldName: name, value: values.get(name) }));
}

function problem(at: string, code: string, message: string): InputProblem {
  return { pointer: at, code, message, status: 422 };
}
