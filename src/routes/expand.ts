import type { Context } from '../context.ts';
import type { Caller } from '../domain/access.ts';
import { expandedOf, referencedIds } from '../domain/references.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { lookupTargets, withLookups } from '../domain/lookups.ts';
import { withRollups } from '../domain/rollups.ts';
import type { FieldValueOut, RecordOut } from '../schemas/record.ts';
import { referencedRows } from '../storage/references.ts';
import { rollupsRead } from '../storage/store.ts';

/**
 * Names in `expand=a,b` (a query parameter), in order; empty names are kept, for the check to
 * refuse, and so is a second `expand` parameter (its names follow, so a name given twice is refused).
 */
export const expandParam = (params: URLSearchParams): string[] | undefined =>
  params.has('expand') ? params.getAll('expand').flatMap((raw) => raw.split(',')) : undefined;

/**
 * The records with their rollups (read with them) and their lookups' values (`defs`: their objects'
 * definitions), as the caller may see what the lookups read: one D1 read for the page, none when
 * its lookups read nothing.
 */
export async function withLookupValues<T extends RecordOut>(
  context: Context,
  caller: Caller,
  read: readonly T[],
  defs: ReadonlyMap<number, ObjectDef> | readonly ObjectDef[],
): Promise<T[]> {
  const byId = defs instanceof Map ? defs : new Map((defs as readonly ObjectDef[]).map((def) => [def.id, def]));
  const records = read.map((record) => withRollups(record, byId.get(record.objectId), rollupsRead.get(record)));
  const { ids, fields } = lookupTargets(records, byId);
  if (ids.length === 0) return records;
  const rows = await referencedRows(context.reads, context.meter, ids, fields);
  return records.map((record) => withLookups(record, byId.get(record.objectId), rows, caller));
}

/**
 * Each record with `expanded`: what its reference fields in `fields` name, as the caller may see
 * it. One D1 read for the whole page (none when nothing is referenced or nothing asked).
 */
export async function withExpanded<T extends { fieldValues: FieldValueOut[] }>(
  context: Context,
  caller: Caller,
  records: readonly T[],
  fields: readonly string[] | undefined,
): Promise<(T & { expanded?: ReturnType<typeof expandedOf> })[]> {
  if (fields === undefined) return [...records];
  const ids = referencedIds(records, fields);
  const rows = await referencedRows(context.reads, context.meter, ids);
  return records.map((record) => ({ ...record, expanded: expandedOf(record, fields, rows, caller) }));
}
