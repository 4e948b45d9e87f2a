import { pointer, type InputProblem } from '../core/problem.ts';
import type { Result } from '../core/result.ts';
import type { CreateItemIn, FieldValueOut } from '../schemas/record.ts';
import { canCreate, createLimits, visibleDef, type Caller } from './access.ts';
import { readOnlyProblems } from './patch.ts';
import type { ObjectDef } from './definition.ts';
import { applyFieldValues, sizeProblem } from './field-values.ts';
import { withFormulas } from './formula-values.ts';
import { renderTemplate } from './name.ts';

/** A record ready to insert: everything but the id, which storage allocates. */
export interface NewRecord {
  objectId: number;
  objectVersion: number;
  /** The rendered name, or undefined for `<objectName> #<id>`. */
  name: string | undefined;
  objectName: string;
  fieldValues: FieldValueOut[];
  sharedWorkspaceIds: number[];
  userId: number;
  now: number;
  isTemplate: boolean;
  creationType: 'System' | 'User';
}

export type Plan<T> = Result<T>;

/**
 * Checks a well-shaped create batch against the object definitions and builds
 * the records to insert, or lists every problem of every element.
 */
export function planCreate(
  caller: Caller,
  items: readonly CreateItemIn[],
  objects: ReadonlyMap<number, ObjectDef>,
  now: number,
): Plan<NewRecord[]> {
  const problems: InputProblem[] = [];
  const records: NewRecord[] = [];
  items.forEach((item, index) => {
    const def = objects.get(item.objectId);
    if (def === undefined || !canCreate(caller, def)) {
      // An unknown and an inaccessible object answer the same.
      problems.push({
        pointer: pointer('', index, 'objectId'),
        code: 'unknown_object',
        message: 'no object definition you may create records for',
        status: 422,
      });
      return;
    }
    // A field hidden from the caller is as one the object does not have; one they may only read, 403.
    const limits = createLimits(caller, def);
    const readOnly = readOnlyProblems(limits.readOnly, item.fieldValues, pointer('', index));
    const applied = applyFieldValues(visibleDef(def, limits), [], item.fieldValues, pointer('', index), 'create');
    problems.push(...(readOnly.length > 0 ? readOnly : applied.problems));
    const values = withFormulas(def, applied.values, { createdAt: now, updatedAt: now });
    const tooLarge = problems.length === 0 ? sizeProblem(values, pointer('', index)) : undefined;
    if (tooLarge !== undefined) problems.push(tooLarge);
    records.push({
      objectId: def.id,
      objectVersion: def.version,
      name: renderTemplate(def, values),
      objectName: def.name,
      fieldValues: values,
      sharedWorkspaceIds: def.workspaceIds,
      userId: caller.userId,
      now,
      isTemplate: item.isTemplate ?? false,
      creationType: 'User',
    });
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: records };
}
