import type { Diff } from './change.ts';
import type { ChangeType } from './patch.ts';
import type { FieldValueOut, RecordOut } from '../schemas/record.ts';

/** A change as storage keeps it: `data` is the created record's JSON, or a diff (change.ts). */
export interface ChangeRow {
  seq: number;
  recordId: number;
  version: number;
  type: ChangeType;
  at: number;
  by: number;
  data: string;
  /** The record's object, read for a reader whose role may hide some of its fields. */
  objectId?: number;
}

const nameOf = (name: string | undefined): { name?: string } => (name === undefined ? {} : { name });

/**
 * A change as the feed (and every webhook) shows it: a created record in full; an update as
 * the fields it changed (each with its new value, `null` when removed) and the name when it
 * changed; a delete or restore as nothing more, but the formulas reading `updatedAt` it changed.
 * Changes written before diffs were kept carry their whole record's values.
 */

export function feedItem(
  change: ChangeRow,
  cursor: string,
  hidden: ReadonlySet<string> = new Set(),
): Record<string, unknown> {
  const { type, at, by, recordId, version } = change;
  const item: Record<string, unknown> = { cursor, type, at, by, recordId, version };
  const data = JSON.parse(change.data) as { record?: RecordOut } & Partial<Diff> & Partial<RecordOut>;
  const shown = (values: readonly FieldValueOut[]): FieldValueOut[] =>
    values.filter((value) => !hidden.has(value.fieldName));
  const hides = (values: readonly FieldValueOut[] | undefined): boolean =>
    hidden.size > 0 && (values ?? []).some((value) => hidden.has(value.fieldName));
  if (type === 'created')
    return {
      ...item,
      record: hides(data.fieldValues) ? { ...data, fieldValues: shown(data.fieldValues ?? []) } : data,
    };
  // A delete or restore changes no value but those of formulas reading updatedAt: those, if any.
  if (type !== 'updated')
    return data.set === undefined ? item : { ...item, fieldValues: shown(data.set), ...nameOf(data.name) };
  if (data.record !== undefined)
    return { ...item, fieldValues: shown(data.record.fieldValues), name: data.record.name };
  return { ...item, fieldValues: shown(data.set ?? []), ...(data.name === undefined ? {} : { name: data.name }) };
}
