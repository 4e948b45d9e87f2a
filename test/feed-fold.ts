/**
 * A feed consumer's fold, written apart from the service's own (src/domain/change.ts): each item
 * applied to the record state before it, field values by name.
 */

/** A record with its field values keyed by name: the feed rebuilds values by name, not order. */
export function byName(record: any): any {
  return { ...record, fieldValues: Object.fromEntries(record.fieldValues.map((e: any) => [e.fieldName, e.value])) };
}

/** The state right after `item`, from the state before it (by name; undefined before `created`). */
export function foldItem(prev: any, item: any): any {
  if (item.type === 'created') return byName(item.record);
  if (prev === undefined) throw new Error(`feed item for record ${item.recordId} before its created item`);
  const fieldValues = { ...prev.fieldValues };
  for (const { fieldName, value } of item.fieldValues ?? []) {
    if (value === null) delete fieldValues[fieldName];
    else fieldValues[fieldName] = value;
  }
  const state = { ...prev, fieldValues, version: item.version, updatedAt: item.at, updatedBy: item.by };
  if (item.name !== undefined) state.name = item.name;
  if (item.type === 'deleted') state.deleted = true;
  if (item.type === 'restored') state.deleted = false;
  return state;
}

/** Folds feed items in order: each item's record state right after it. */
export function foldFeed(items: readonly any[]): any[] {
  const states = new Map<number, any>();
  return items.map((item) => {
    const state = foldItem(states.get(item.recordId ?? item.record?.id), item);
    states.set(state.id, state);
    return state;
  });
}
