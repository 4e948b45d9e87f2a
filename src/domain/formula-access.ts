import { pointer, type InputProblem } from '../core/problem.ts';
import type { FieldDef } from './definition.ts';
import { compileFormulas } from './formula-language.ts';

/**
 * A formula shows what it reads: a role that hides a field must hide every formula reading it
 * (directly or through other formulas), or the formula's value would tell the hidden one; and a
 * lookup shows what its reference field names, so it goes with that field.
 */

/** Each formula (or lookup) field of `fields` with every field it reads, through other formulas too. */
export function formulaInputs(fields: readonly FieldDef[]): Map<string, Set<string>> {
  const compiled = fields.some((field) => field.type === 'formula') ? compileFormulas(fields) : undefined;
  const reads = new Map<string, Set<string>>();
  // A lookup reads its reference field (what it shows comes from the records that field names).
  for (const field of fields)
    if (field.type === 'lookup' && field.reference !== undefined) reads.set(field.name, new Set([field.reference]));
  if (compiled?.ok !== true) return reads;
  // Compiled in an order where a formula comes after those it reads.
  for (const formula of compiled.formulas) {
    const all = new Set<string>();
    for (const input of formula.inputs) {
      all.add(input);
      for (const further of reads.get(input) ?? []) all.add(further);
    }
    reads.set(formula.name, all);
  }
  return reads;
}

/** The formulas that read a field of `hidden` but are not hidden themselves: [formula, the hidden field it reads]. */
export function formulasShowing(fields: readonly FieldDef[], hidden: ReadonlySet<string>): [string, string][] {
  if (hidden.size === 0) return [];
  return [...formulaInputs(fields)].flatMap(([formula, reads]): [string, string][] => {
    const shown = [...reads].find((name) => hidden.has(name));
    return hidden.has(formula) || shown === undefined ? [] : [[formula, shown]];
  });
}

/** A definition's formulas that read a field some role hides while that role shows them: 422 at each expression. */
export function hiddenInputProblems(fields: readonly FieldDef[], hiddenByRole: readonly ReadonlySet<string>[]) {
  const problems = new Map<string, InputProblem>();
  for (const hidden of hiddenByRole)
    for (const [formula, input] of formulasShowing(fields, hidden)) {
      const i = fields.findIndex((field) => field.name === formula);
      problems.set(formula, {
        pointer: pointer('', 'fields', i, fields[i]?.type === 'lookup' ? 'reference' : 'expression'),
        code: 'hidden_field',
        message: `a role hides ${input}, which this formula reads: that role must hide the formula too`,
        status: 422,
      });
    }
  return [...problems.values()];
}
