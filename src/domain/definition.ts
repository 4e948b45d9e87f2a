import { pointer, type InputProblem } from '../core/problem.ts';
import type { ObjectDefinitionIn } from '../schemas/admin.ts';
import { templateFields } from './name.ts';
import type { FieldDef, FieldType, ObjectDef } from './object-def.ts';

export type { FieldDef, FieldType, ObjectDef } from './object-def.ts';

/** Which field types take `options`: every type is named, so a new one fails to compile until decided. */
const TAKES_OPTIONS: Record<FieldType, boolean> = {
  text: false,
  number: false,
  integer: false,
  boolean: false,
  date: false,
  datetime: false,
  select: true,
  multiSelect: true,
  email: false,
  url: false,
  json: false,
};

/** Types whose values an index keeps (scalars). */
export const INDEXABLE: ReadonlySet<FieldType> = new Set<FieldType>([
  'text',
  'number',
  'integer',
  'boolean',
  'date',
  'datetime',
  'select',
  'email',
  'url',
]);
/** Types a field may be unique in. */
export const UNIQUE_TYPES: ReadonlySet<FieldType> = new Set<FieldType>(['text', 'email', 'url', 'integer', 'date']);

/** Whether queries find a field by the index: marked indexed, or unique (which implies it). */
export const isIndexed = (field: FieldDef): boolean => field.indexed === true || field.unique === true;

/** Rules of a definition that its schema cannot express; each answers 400 like a shape problem. */
export function definitionProblems(input: ObjectDefinitionIn): InputProblem[] {
  const problems: InputProblem[] = [];
  const add = (at: string, code: string, message: string): void => {
    problems.push({ pointer: at, code, message });
  };
  const seenWorkspaces = new Set<number>();
  input.workspaceIds.forEach((id, i) => {
    if (seenWorkspaces.has(id)) add(pointer('', 'workspaceIds', i), 'duplicate', 'workspace listed more than once');
    seenWorkspaces.add(id);
  });
  const names = new Set<string>();
  input.fields.forEach((field, i) => {
    if (names.has(field.name)) add(pointer('', 'fields', i, 'name'), 'duplicate', 'field name used more than once');
    names.add(field.name);
    const choice = TAKES_OPTIONS[field.type];
    if (choice && (field.options === undefined || field.options.length === 0)) {
      add(pointer('', 'fields', i, 'options'), 'required', `a ${field.type} field needs options`);
    }
    if (!choice && field.options !== undefined)
      add(pointer('', 'fields', i, 'options'), 'not_allowed', 'only select fields take options');
    if (field.indexed === true && !INDEXABLE.has(field.type))
      add(pointer('', 'fields', i, 'indexed'), 'not_allowed', `a ${field.type} field cannot be indexed`);
    if (field.unique === true && !UNIQUE_TYPES.has(field.type))
      add(pointer('', 'fields', i, 'unique'), 'not_allowed', `a ${field.type} field cannot be unique`);
    if (field.options !== undefined && new Set(field.options).size !== field.options.length) {
      add(pointer('', 'fields', i, 'options'), 'duplicate', 'options must be distinct');
    }
  });
  for (const name of templateFields(input.nameTemplate ?? '')) {
    if (!names.has(name)) add('/nameTemplate', 'unknown_field', `the template names ${name}, which is not a field`);
  }
  return problems;
}

/** The definition as the admin API answers it (the shape PUT accepts, plus id and version). */
export function definitionOut(def: ObjectDef): Record<string, unknown> {
  const { id, version, name, workspaceIds, nameTemplate, fields } = def;
  return { id, version, name, workspaceIds, ...(nameTemplate === undefined ? {} : { nameTemplate }), fields };
}
