import type { FieldValueOut, RecordOut } from '../schemas/record.ts';
import { recordAccess, type Caller } from './access.ts';
import type { ObjectDef } from './definition.ts';
import { ordered } from './field-values.ts';
import { idsOf, type ReferencedRow } from './references.ts';

/**
 * Lookup fields: a record shows, under a lookup's name, the value its reference's record holds in
 * the lookup's field, as the reader may see that record: none when the reader cannot read it (as
 * for a missing one), the field is hidden from them there, the record is deleted or holds none.
 * A reference of several ids shows the values of those that give one, in order.
 */

type Lookup = { name: string; reference: string; field: string };

/** The lookups of a definition. */
export const lookupsOf = (def: ObjectDef | undefined): Lookup[] =>
  (def?.fields ?? []).flatMap((f) =>
    f.type === 'lookup' && f.reference !== undefined && f.field !== undefined
      ? [{ name: f.name, reference: f.reference, field: f.field }]
      : [],
  );

/** What the lookups of a page's records read: the records their references name, and which of their fields. */
export function lookupTargets(
  records: readonly { objectId: number; fieldValues: readonly FieldValueOut[] }[],
  defs: ReadonlyMap<number, ObjectDef>,
): { ids: number[]; fields: string[] } {
  const ids = new Set<number>();
  const fields = new Set<string>();
  for (const record of records)
    for (const lookup of lookupsOf(defs.get(record.objectId))) {
      fields.add(lookup.field);
      const value = record.fieldValues.find((entry) => entry.fieldName === lookup.reference)?.value;
      for (const id of idsOf(value)) ids.add(id);
    }
  return { ids: [...ids], fields: [...fields] };
}

/** The record with its lookups' values, as `caller` may see the records they read (`rows`). */
export function withLookups<T extends RecordOut>(
  record: T,
  def: ObjectDef | undefined,
  rows: ReadonlyMap<number, ReferencedRow & { values?: ReadonlyMap<string, unknown> }>,
  caller: Caller,
): T {
  const lookups = lookupsOf(def);
  if (def === undefined || lookups.length === 0) return record;
  const values = new Map(record.fieldValues.map((entry) => [entry.fieldName, entry.value]));
  const valueIn = (id: number, field: string): unknown => {
    const row = rows.get(id);
    if (row === undefined || row.deleted) return undefined;
    const access = recordAccess(caller, row);
    return access.read && !access.fields.hidden.has(field) ? row.values?.get(field) : undefined;
  };
  for (const { name, reference, field } of lookups) {
    const held = values.get(reference);
    const found = idsOf(held)
      .map((id) => valueIn(id, field))
      .filter((value) => value !== undefined && value !== null);
    values.delete(name);
    if (Array.isArray(held) ? found.length > 0 : found[0] !== undefined)
      values.set(name, Array.isArray(held) ? found : found[0]);
  }
  return { ...record, fieldValues: ordered(def, record.fieldValues, values) };
}
