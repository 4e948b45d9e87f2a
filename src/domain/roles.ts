import { pointer, type InputProblem } from '../core/problem.ts';
import type { ObjectRuleIn } from '../schemas/admin.ts';
import type { ObjectRule } from './access.ts';
import type { ObjectDef } from './definition.ts';
import { formulasShowing } from './formula-access.ts';
import { templateFields } from './name.ts';

/**
 * A defined role's rules checked against the objects they name, and written out whole: every
 * object it lists exists, once; every field it limits is a field of that object; no field the
 * object's name template uses is hidden (the name would show it), nor a required one from a member
 * who creates records. Every problem is listed.
 */
export function roleRules(
  objects: readonly ObjectRuleIn[],
  defs: ReadonlyMap<number, ObjectDef>,
): { ok: true; rules: ObjectRule[] } | { ok: false; problems: InputProblem[] } {
  const problems: InputProblem[] = [];
  const add = (at: string, code: string, message: string): void => void problems.push({ pointer: at, code, message });
  const seen = new Set<number>();
  const rules = objects.map((input, i): ObjectRule => {
    const def = defs.get(input.objectId);
    if (seen.has(input.objectId))
      add(pointer('', 'objects', i, 'objectId'), 'duplicate', 'the role lists this object already');
    seen.add(input.objectId);
    if (def === undefined) add(pointer('', 'objects', i, 'objectId'), 'unknown_object', 'no such object');
    for (const right of ['create', 'update', 'delete'] as const)
      if (input[right] === true && input.read !== true)
        add(pointer('', 'objects', i, right), 'needs_read', `${right} needs read: a member sees what they write`);
    const fields = input.fields ?? {};
    const named = new Set(def?.fields.map((field) => field.name) ?? []);
    const inName = new Set(templateFields(def?.nameTemplate ?? ''));
    const required = new Set(def?.fields.filter((field) => field.required === true).map((field) => field.name) ?? []);
    const hidden = new Set(Object.keys(fields).filter((name) => fields[name] === 'hidden'));
    for (const [formula, input] of formulasShowing(def?.fields ?? [], hidden))
      add(
        pointer('', 'objects', i, 'fields', input),
        'formula_field',
        `${formula} (a formula or lookup) reads this field: hide it too, or its value would show this one`,
      );
    for (const [name, limit] of Object.entries(fields)) {
      const at = pointer('', 'objects', i, 'fields', name);
      if (def !== undefined && !named.has(name)) add(at, 'unknown_field', 'not a field of the object');
      else if (limit === 'hidden' && inName.has(name))
        add(at, 'name_template_field', "the object's name template uses this field: its name would show it");
      else if (limit === 'hidden' && input.create === true && required.has(name))
        add(at, 'required_field', 'a member who creates records must be able to give this required field');
    }
    return {
      objectId: input.objectId,
      read: input.read ?? false,
      create: input.create ?? false,
      update: input.update ?? false,
      delete: input.delete ?? false,
      rows: input.rows ?? 'all',
      fields: Object.fromEntries(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    };
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, rules };
}
