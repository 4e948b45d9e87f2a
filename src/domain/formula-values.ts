import type { FieldValueOut } from '../schemas/record.ts';
import type { FieldDef, ObjectDef } from './definition.ts';
import { ordered } from './field-values.ts';
import { computeFormulas } from './formula-eval.ts';
import { compileFormulas, type Compiled } from './formula-language.ts';

/**
 * A record's formula values: computed from its other values (and its `createdAt` and `updatedAt`)
 * wherever a write makes a record's new state, so that every kind of write stores them alike.
 */

const compiled = new WeakMap<readonly FieldDef[], readonly Compiled[]>();

/** The formulas of a definition in the order they are computed, compiled once per definition read. */
export function formulasOf(def: ObjectDef): readonly Compiled[] {
  let formulas = compiled.get(def.fields);
  if (formulas === undefined) {
    // A stored definition's formulas compiled when it was written; one that no longer does computes none.
    const result = def.fields.some((field) => field.type === 'formula') ? compileFormulas(def.fields) : undefined;
    formulas = result?.ok === true ? result.formulas : [];
    compiled.set(def.fields, formulas);
  }
  return formulas;
}

/** When a record was made and last changed (epoch milliseconds): formulas may read both. */
export interface RecordTimes {
  createdAt: number;
  updatedAt: number;
}

/** `values` with each formula of `def` as computed from them: a blank result leaves its field out. */
export function withFormulas(def: ObjectDef, values: readonly FieldValueOut[], times: RecordTimes): FieldValueOut[] {
  const formulas = formulasOf(def);
  if (formulas.length === 0) return [...values];
  const inputs = new Map(values.map((entry) => [entry.fieldName, entry.value]));
  for (const formula of formulas) inputs.delete(formula.name);
  for (const [name, value] of computeFormulas(formulas, inputs, times)) if (value !== null) inputs.set(name, value);
  return ordered(def, values, inputs);
}
