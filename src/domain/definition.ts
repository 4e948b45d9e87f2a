import { pointer, type InputProblem } from '../core/problem.ts';
import type { ObjectDefinitionIn } from '../schemas/admin.ts';
import { valueType } from './field-types.ts';
import { compileFormulas } from './formula-language.ts';
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
  reference: false,
  file: false,
  formula: false,
  lookup: false,
  rollup: false,
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

/**
 * Whether queries find a field by the index: marked indexed, unique (which implies it), a reference
 * or a rollup (always).
 */
export const isIndexed = (field: FieldDef): boolean =>
  field.indexed === true || field.unique === true || field.type === 'reference' || field.type === 'rollup';

/** The properties only a reference field takes. */
const REFERENCE_ONLY = ['target', 'multiple', 'onDelete'] as const;
/** The properties only a formula field takes, and needs; and a lookup's. */
const FORMULA_ONLY = ['expression', 'resultType'] as const;
const LOOKUP_ONLY = ['reference', 'field'] as const;
const ROLLUP_ONLY = ['from', 'op', 'of'] as const;
/** Fields whose values no write gives: computed, or read from elsewhere. */
export const isComputed = (field: FieldDef): boolean =>
  field.type === 'formula' || field.type === 'lookup' || field.type === 'rollup';
/** Fields whose values come from other records: never stored with the record, never in its name. */
export const isReadElsewhere = (field: FieldDef): boolean => field.type === 'lookup' || field.type === 'rollup';

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
    if (field.type === 'reference') {
      if (field.target === undefined)
        add(pointer('', 'fields', i, 'target'), 'required', 'a reference field needs a target');
      if (field.indexed !== undefined || field.unique !== undefined) {
        const at = field.indexed === undefined ? 'unique' : 'indexed';
        add(pointer('', 'fields', i, at), 'not_allowed', 'a reference field is always indexed and never unique');
      }
    } else {
      for (const key of REFERENCE_ONLY)
        if (field[key] !== undefined && !(key === 'multiple' && field.type === 'file'))
          add(pointer('', 'fields', i, key), 'not_allowed', 'only reference fields take it');
    }
    for (const key of FORMULA_ONLY) {
      if (field.type === 'formula' && field[key] === undefined)
        add(
          pointer('', 'fields', i, key),
          'required',
          `a formula field needs ${key === 'expression' ? 'an' : 'a'} ${key}`,
        );
      if (field.type !== 'formula' && field[key] !== undefined)
        add(pointer('', 'fields', i, key), 'not_allowed', 'only formula fields take it');
    }
    for (const key of LOOKUP_ONLY) {
      if (field.type === 'lookup' && field[key] === undefined)
        add(pointer('', 'fields', i, key), 'required', `a lookup field needs a ${key}`);
      if (field.type !== 'lookup' && field[key] !== undefined)
        add(pointer('', 'fields', i, key), 'not_allowed', 'only lookup fields take it');
    }
    for (const key of ROLLUP_ONLY) {
      const needed = field.type === 'rollup' && (key !== 'of' || field.op !== 'count');
      if (needed && field[key] === undefined)
        add(
          pointer('', 'fields', i, key),
          'required',
          `a rollup field ${key === 'of' ? 'other than a count ' : ''}needs ${key}`,
        );
      if (!needed && field[key] !== undefined)
        add(
          pointer('', 'fields', i, key),
          'not_allowed',
          field.type === 'rollup' ? 'a count counts records: it reads no field' : 'only rollup fields take it',
        );
    }
    if (field.type === 'rollup' && (field.indexed !== undefined || field.unique !== undefined))
      add(
        pointer('', 'fields', i, field.indexed === undefined ? 'unique' : 'indexed'),
        'not_allowed',
        'a rollup is always indexed and never unique',
      );
    if (isComputed(field) && field.required !== undefined)
      add(pointer('', 'fields', i, 'required'), 'not_allowed', `a ${field.type} is never given, so never required`);
    if (field.indexed === true && !INDEXABLE.has(valueType(field)) && field.type !== 'reference')
      add(pointer('', 'fields', i, 'indexed'), 'not_allowed', `a ${field.type} field cannot be indexed`);
    if (
      field.unique === true &&
      (field.type === 'formula' || (!UNIQUE_TYPES.has(field.type) && field.type !== 'reference'))
    )
      add(pointer('', 'fields', i, 'unique'), 'not_allowed', `a ${field.type} field cannot be unique`);
    if (field.options !== undefined && new Set(field.options).size !== field.options.length) {
      add(pointer('', 'fields', i, 'options'), 'duplicate', 'options must be distinct');
    }
  });
  const elsewhere = new Map(input.fields.filter(isReadElsewhere).map((f) => [f.name, f.type]));
  for (const name of templateFields(input.nameTemplate ?? '')) {
    const type = elsewhere.get(name);
    if (type !== undefined)
      add('/nameTemplate', 'not_allowed', `${name} is a ${type}, read from other records: a name cannot hold it`);
    if (!names.has(name)) add('/nameTemplate', 'unknown_field', `the template names ${name}, which is not a field`);
  }
  return problems;
}

/**
 * Formula fields whose expression does not compile against the definition (an unknown field, a
 * type that does not fit, a cycle, too long or deep): each 422 at its expression, with the position.
 */
export function formulaProblems(input: ObjectDefinitionIn): InputProblem[] {
  if (!input.fields.some((field) => field.type === 'formula' && field.expression !== undefined)) return [];
  const compiled = compileFormulas(input.fields);
  if (compiled.ok) return [];
  return compiled.problems.map(({ field, position, code, message }) => ({
    pointer: pointer('', 'fields', field, 'expression'),
    position,
    code: `formula_${code}`,
    message,
    status: 422,
  }));
}

/**
 * Lookup fields that do not read through a reference field of this definition to a field of its
 * target (`targets`: the definitions of the objects its references name; this one's own fields
 * under `self`): each 422 at what is wrong. A lookup does not read another lookup.
 */
export function lookupProblems(
  input: ObjectDefinitionIn,
  targets: ReadonlyMap<number, readonly FieldDef[]>,
): InputProblem[] {
  return input.fields.flatMap((field, i): InputProblem[] => {
    if (field.type !== 'lookup' || field.reference === undefined || field.field === undefined) return [];
    const at = (key: string, message: string): InputProblem[] => [
      { pointer: pointer('', 'fields', i, key), code: 'invalid_lookup', message, status: 422 },
    ];
    const reference = input.fields.find((f) => f.name === field.reference);
    if (reference?.type !== 'reference' || reference.target === undefined)
      return at('reference', `${field.reference} is not a reference field of this object`);
    const target = targets.get(reference.target)?.find((f) => f.name === field.field);
    if (target === undefined)
      return at('field', `the records ${field.reference} references have no field ${field.field}`);
    if (target.type === 'rollup')
      return at('field', `${field.field} is a rollup: its records keep it, not their values`);
    return target.type === 'lookup' ? at('field', `${field.field} is a lookup itself: read its own reference`) : [];
  });
}

/** The definition as the admin API answers it (the shape PUT accepts, plus id and version). */
export function definitionOut(def: ObjectDef): Record<string, unknown> {
  const { id, version, name, workspaceIds, nameTemplate, fields } = def;
  return { id, version, name, workspaceIds, ...(nameTemplate === undefined ? {} : { nameTemplate }), fields };
}

/**
 * A definition replacing an object's versions (`history`, oldest first; the last is current) keeps
 * each reference field whole: its type, target and arity, and a `keep` field never becomes
 * `restrict` (records may reference deleted records by it already). A field name can be a
 * reference only while it has always been one since it first appeared: a field that was not a
 * reference may not become one, and a reference taken out may not come back (records keep the
 * values of fields taken out, written unchecked against the new field). 422 at what changed.
 */
export function referenceChanges(history: readonly (readonly FieldDef[])[], input: ObjectDefinitionIn): InputProblem[] {
  const current = new Map((history.at(-1) ?? []).map((field) => [field.name, field]));
  const ever = new Map<string, FieldDef[]>();
  for (const fields of history)
    for (const field of fields) ever.set(field.name, [...(ever.get(field.name) ?? []), field]);
  return input.fields.flatMap((field, i) => {
    const at = (key: string): string => pointer('', 'fields', i, key);
    const was = current.get(field.name);
    const before = ever.get(field.name) ?? [];
    if (field.type !== 'reference') {
      return was?.type === 'reference' ? [fixed(at('type'), 'a reference field cannot stop being one')] : [];
    }
    if (was === undefined)
      return before.length === 0
        ? []
        : [fixed(at('name'), 'this name held another field before: a reference needs a new name')];
    if (was.type !== 'reference' || before.some((f) => f.type !== 'reference'))
      return [fixed(at('type'), 'a field cannot become a reference')];
    if (was.target !== field.target)
      return [fixed(at('target'), `the field references object ${String(was.target)} for good`)];
    if ((was.multiple === true) !== (field.multiple === true))
      return [fixed(at('multiple'), 'a reference field cannot change between one id and many')];
    if (was.onDelete === 'keep' && field.onDelete !== 'keep')
      return [fixed(at('onDelete'), 'a keep reference cannot become restrict: records may reference deleted ones')];
    return [];
  });
}

const fixed = (at: string, message: string): InputProblem => ({ pointer: at, code: 'fixed', message, status: 422 });

/**
 * A field can be a lookup or a rollup only under a name no other kind of field of the object ever
 * held (`history`: its versions' fields): records keep the values of such a field, which it would
 * show as its own. 422 at the type.
 */
export function lookupNames(history: readonly (readonly FieldDef[])[], input: ObjectDefinitionIn): InputProblem[] {
  return input.fields.flatMap((field, i) => {
    if (!isReadElsewhere(field)) return [];
    const held = history.some((fields) => fields.some((f) => f.name === field.name && f.type !== field.type));
    return held
      ? [
          fixed(
            pointer('', 'fields', i, 'type'),
            `records hold values of the field this name held: a ${field.type} needs a new name`,
          ),
        ]
      : [];
  });
}

/** A field of a source object as a rollup reads it: a number (or a formula giving one). */
const isNumber = (field: FieldDef | undefined): boolean =>
  field !== undefined && (valueType(field) === 'number' || valueType(field) === 'integer') && field.type !== 'rollup';

/**
 * Rollup fields that do not summarize records referencing this object (`objectId`; none yet for a
 * new one): their object must exist, reference this one by `from.field`, and hold the number `of`
 * (`sources`: the definitions of the objects they name). Each 422 at what is wrong.
 */
export function rollupProblems(
  input: ObjectDefinitionIn,
  sources: ReadonlyMap<number, readonly FieldDef[]>,
  objectId: number | undefined,
): InputProblem[] {
  return input.fields.flatMap((field, i): InputProblem[] => {
    if (field.type !== 'rollup' || field.from === undefined) return [];
    const at = (keys: readonly string[], code: string, message: string): InputProblem => ({
      pointer: pointer('', 'fields', i, ...keys),
      code,
      message,
      status: 422,
    });
    const { objectId: from, field: by } = field.from;
    const source = from === objectId ? input.fields : sources.get(from);
    if (source === undefined) return [at(['from', 'objectId'], 'unknown_object', 'no such object')];
    const problems: InputProblem[] = [];
    const reference = source.find((f) => f.name === by);
    if (reference?.type !== 'reference' || objectId === undefined || reference.target !== objectId)
      problems.push(
        at(['from', 'field'], 'invalid_rollup', `${by} is not a reference field of object ${from} to this object`),
      );
    if (field.of !== undefined && !isNumber(source.find((f) => f.name === field.of)))
      problems.push(at(['of'], 'invalid_rollup', `${field.of} is not a number field of object ${from}`));
    return problems;
  });
}

/** A rollup of some object reading this one's records: by which reference, and which number. */
export interface RollupReader {
  objectId: number;
  name: string;
  field: string;
  of: string | null;
}

/**
 * A definition replacing one whose records other objects' rollups read (`readers`) keeps what they
 * read: the reference they follow and a number field they add up. 422 at the field, or at `/fields`
 * for one taken out: take the rollup out first.
 */
export function readByRollups(readers: readonly RollupReader[], input: ObjectDefinitionIn): InputProblem[] {
  return readers.flatMap((reader) => {
    const what = `the rollup ${reader.name} of object ${reader.objectId} reads it`;
    return [reader.field, ...(reader.of === null ? [] : [reader.of])].flatMap((name) => {
      const i = input.fields.findIndex((f) => f.name === name);
      const field = input.fields[i];
      const kept = name === reader.field ? field?.type === 'reference' : isNumber(field);
      if (kept) return [];
      return [
        {
          pointer: field === undefined ? '/fields' : pointer('', 'fields', i, 'type'),
          code: 'read_by_rollup',
          message:
            field === undefined
              ? `${name} cannot be taken out: ${what}`
              : `${name} must stay a ${name === reader.field ? 'reference' : 'number'}: ${what}`,
          status: 422,
        },
      ];
    });
  });
}

/**
 * Names a field may not take, in any case: a record's own properties. A field so named would be
 * shadowed by the property in queries and exports (a filter on `name` compares the record's name).
 */
export const RESERVED_FIELD_NAMES: readonly string[] = [
  'id',
  'name',
  'version',
  'objectId',
  'createdAt',
  'updatedAt',
  'createdBy',
  'updatedBy',
  'ownedBy',
  'deleted',
  'isTemplate',
  'creationType',
];
const RESERVED = new Set(RESERVED_FIELD_NAMES.map((name) => name.toLowerCase()));

/**
 * Fields of a definition named like a record's own property (any case), each a 422 at its name;
 * a field of the current version (`current`) keeps its name, so a definition that already holds one
 * can still be replaced.
 */
export function reservedNames(current: readonly FieldDef[], input: ObjectDefinitionIn): InputProblem[] {
  const kept = new Set(current.map((field) => field.name));
  return input.fields.flatMap((field, i) =>
    RESERVED.has(field.name.toLowerCase()) && !kept.has(field.name)
      ? [
          {
            pointer: pointer('', 'fields', i, 'name'),
            code: 'reserved_name',
            message: `${field.name} is a property of every record; choose another field name`,
            status: 422,
          },
        ]
      : [],
  );
}
