import { pointer, type InputProblem } from '../core/problem.ts';
import type { FieldValueOut } from '../schemas/record.ts';
import type { Caller } from './access.ts';
import { recordAccess } from './access.ts';
import type { ObjectDef } from './object-def.ts';

/**
 * References between records, as plain data: which ids a write newly references (what storage
 * checks), which ids a record holds (what `expand` reads), and what an expanded reference shows.
 */

/** An id a write gives a reference field: where it is in the request, and the object it must be of. */
export interface ReferenceClaim {
  pointer: string;
  target: number;
  id: number;
  /** A file a file field names: it must be as its upload answered it, free, and uploaded by the writer. */
  file?: FileOut;
}

/** A file as a record holds it. */
export interface FileOut {
  id: number;
  name: string;
  size: number;
  contentType: string;
}

/** The files a value of a file field holds. */
export const filesOf = (value: unknown): FileOut[] => (Array.isArray(value) ? (value as FileOut[]) : []);

/** The ids a value of a reference field holds: one, or the array's. */
export const idsOf = (value: unknown): number[] =>
  Array.isArray(value) ? (value as number[]) : typeof value === 'number' ? [value] : [];

/**
 * The ids that `changes` (field values sent for a record of `def`) give its reference fields and
 * that the field did not hold already in `current`: each must name a live record of the field's
 * target that the writer can read. `prefix` is the element's pointer; an id in an array is
 * pointed at by its index.
 */
export function referenceClaims(
  def: ObjectDef,
  changes: readonly FieldValueOut[],
  current: readonly FieldValueOut[],
  prefix: string,
): ReferenceClaim[] {
  const held = new Map(current.map((entry) => [entry.fieldName, new Set(idsOf(entry.value))]));
  const heldFiles = new Set(current.flatMap((entry) => filesOf(entry.value).map((file) => file.id)));
  return changes.flatMap(({ fieldName, value }, index) => {
    const field = def.fields.find((f) => f.name === fieldName);
    if (field?.type === 'file' && value !== null) {
      const at = pointer(prefix, 'fieldValues', index, 'value');
      return filesOf(value).flatMap((file, k) =>
        heldFiles.has(file.id) ? [] : [{ pointer: pointer(at, k), target: -1, id: file.id, file }],
      );
    }
    if (field?.type !== 'reference' || field.target === undefined || value === null) return [];
    const at = pointer(prefix, 'fieldValues', index, 'value');
    const target = field.target;
    const before = held.get(fieldName) ?? new Set<number>();
    return idsOf(value).flatMap((id, k) =>
      before.has(id) ? [] : [{ pointer: Array.isArray(value) ? pointer(at, k) : at, target, id }],
    );
  });
}

/** A referenced record as a reader sees it (only when the reader can read it). */
export interface Expanded {
  id: number;
  objectId: number;
  name: string;
  deleted: boolean;
}

/** What storage says of a referenced record: its facts and the workspaces it is shared with. */
export interface ReferencedRow extends Expanded {
  ownedBy: number | null;
  sharedWorkspaceIds: readonly number[];
}

/** The ids that the fields `fields` of these records reference, once each. */
export function referencedIds(
  records: readonly { fieldValues: readonly FieldValueOut[] }[],
  fields: readonly string[],
) {
  const ids = new Set<number>();
  for (const record of records)
    for (const { fieldName, value } of record.fieldValues)
      if (fields.includes(fieldName)) idsOf(value).forEach((id) => ids.add(id));
  return [...ids];
}

/**
 * A record's `expanded` object: for each field asked, the referenced record (`null` when the
 * caller cannot read it or the field has no value), or for an array the ones the caller can read.
 */
export function expandedOf(
  record: { fieldValues: readonly FieldValueOut[] },
  fields: readonly string[],
  rows: ReadonlyMap<number, ReferencedRow>,
  caller: Caller,
): Record<string, Expanded | Expanded[] | null> {
  const shown = (id: number): Expanded | undefined => {
    const row = rows.get(id);
    if (row === undefined || !recordAccess(caller, row).read) return undefined;
    return { id: row.id, objectId: row.objectId, name: row.name, deleted: row.deleted };
  };
  const out: Record<string, Expanded | Expanded[] | null> = {};
  for (const field of fields) {
    const value = record.fieldValues.find((entry) => entry.fieldName === field)?.value;
    out[field] = Array.isArray(value)
      ? idsOf(value).flatMap((id) => shown(id) ?? [])
      : typeof value === 'number'
        ? (shown(value) ?? null)
        : null;
  }
  return out;
}

/**
 * Problems with the fields an `expand` names: each must be a reference field of every one of `defs`
 * that has it (the record's object, or the objects in view), and of one at least. `at(i)` places
 * the problem of the i-th.
 */
export function expandProblems(
  fields: readonly string[],
  defs: readonly ObjectDef[],
  at: (i: number) => { pointer: string } | { query: string },
): InputProblem[] {
  const seen = new Set<string>();
  return fields.flatMap((name, i) => {
    const twice = seen.has(name);
    seen.add(name);
    if (twice) return [{ ...at(i), code: 'duplicate', message: 'field named more than once' }];
    const fields = defs.flatMap((def) => def.fields.filter((field) => field.name === name));
    if (fields.length === 0) return [{ ...at(i), code: 'unknown_field', message: `no field named ${name}` }];
    // Every object that has the field must hold references in it: an id elsewhere is only a number.
    return fields.every((field) => field.type === 'reference')
      ? []
      : [{ ...at(i), code: 'not_a_reference', message: `${name} is not a reference field of every object in view` }];
  });
}

/**
 * Whether a queued write must commit on its own, not folded into a group's final state: a delete,
 * a restore, or a patch that sets a reference field. D1 checks references against each state it
 * is given, so a state that only a group passes through would never be checked.
 */
export const commitsAlone = (call: {
  def: ObjectDef;
  patch: { fieldValues?: readonly FieldValueOut[] };
  action?: 'delete' | 'restore';
}): boolean =>
  call.action !== undefined ||
  (call.patch.fieldValues ?? []).some(
    ({ fieldName }) => call.def.fields.find((f) => f.name === fieldName)?.type === 'reference',
  );
