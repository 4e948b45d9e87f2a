import type { FieldValueOut, RecordOut } from '../schemas/record.ts';
import type { ChangeType } from './patch.ts';

/**
 * What one committed change of a record stores: what changed, not the record. Forward, it is the
 * change feed's item (the new values, `null` for a removed value, the new name); backward, it is
 * enough to undo the change exactly, byte for byte, which is how a write settled by its ledger
 * row answers the state it committed after later writes moved the record on.
 */
export interface Diff {
  /** Fields whose value changed, with the new value (`null`: removed), in the new state's order. */
  set?: FieldValueOut[];
  /** The same fields' previous values (`null`: had none). */
  was?: FieldValueOut[];
  name?: string;
  wasName?: string;
  /** The previous order of field names, only when undoing `set` alone would not rebuild it. */
  order?: string[];
  /** The previous `updatedAt` and `updatedBy`. */
  prevAt: number;
  prevBy: number;
}

/** A change as stored: `created` holds the record as created; every other type a diff. */
export type StoredChange =
  | { type: 'created'; version: number; record: RecordOut }
  | { type: Exclude<ChangeType, 'created'>; version: number; at: number; by: number; diff: Diff };

/** The diff from `prev` to `next`, two consecutive states of one record. */
export function diffOf(prev: RecordOut, next: RecordOut): Diff {
  const before = new Map(prev.fieldValues.map((entry) => [entry.fieldName, entry.value]));
  const after = new Map(next.fieldValues.map((entry) => [entry.fieldName, entry.value]));
  const names = [...after.keys(), ...[...before.keys()].filter((name) => !after.has(name))];
  const changed = names.filter((name) => !sameJson(before.get(name), after.get(name)));
  const diff: Diff = { prevAt: prev.updatedAt, prevBy: prev.updatedBy };
  if (changed.length > 0) {
    diff.set = changed.map((fieldName) => ({ fieldName, value: after.get(fieldName) ?? null }));
    diff.was = changed.map((fieldName) => ({ fieldName, value: before.get(fieldName) ?? null }));
  }
  if (prev.name !== next.name) [diff.name, diff.wasName] = [next.name, prev.name];
  const undone = undoValues(next.fieldValues, diff).map((entry) => entry.fieldName);
  if (
    !sameOrder(
      undone,
      prev.fieldValues.map((entry) => entry.fieldName),
    )
  )
    diff.order = prev.fieldValues.map((entry) => entry.fieldName);
  return diff;
}

/** The state before `change`, from the state right after it. */
export function undo(next: RecordOut, change: Exclude<StoredChange, { type: 'created' }>): RecordOut {
  const { diff } = change;
  const prev: RecordOut = { ...next, version: change.version - 1, updatedAt: diff.prevAt, updatedBy: diff.prevBy };
  if (change.type === 'deleted') prev.deleted = false;
  if (change.type === 'restored') prev.deleted = true;
  if (diff.wasName !== undefined) prev.name = diff.wasName;
  if (diff.was !== undefined || diff.order !== undefined) prev.fieldValues = undoValues(next.fieldValues, diff);
  return prev;
}

/** The state after `change` (what a feed consumer does): field values by name, order aside. */
export function fold(prev: RecordOut, change: Exclude<StoredChange, { type: 'created' }>): RecordOut {
  const values = new Map(prev.fieldValues.map((entry) => [entry.fieldName, entry.value]));
  for (const { fieldName, value } of change.diff.set ?? []) {
    if (value === null) values.delete(fieldName);
    else values.set(fieldName, value);
  }
  return {
    ...prev,
    fieldValues: [...values].map(([fieldName, value]) => ({ fieldName, value })),
    ...(change.diff.name === undefined ? {} : { name: change.diff.name }),
    version: change.version,
    deleted: change.type === 'deleted' ? true : change.type === 'restored' ? false : prev.deleted,
    updatedAt: change.at,
    updatedBy: change.by,
  };
}

/**
 * `next`'s values with `was` put back: a value that was there before keeps its place, a removed
 * one goes back at the end (or where `order` says).
 */
function undoValues(next: readonly FieldValueOut[], diff: Diff): FieldValueOut[] {
  const values = new Map(next.map((entry) => [entry.fieldName, entry.value]));
  for (const { fieldName, value } of diff.was ?? []) {
    if (value === null) values.delete(fieldName);
    else values.set(fieldName, value);
  }
  const names = diff.order ?? [...values.keys()];
  return names.flatMap((fieldName) => (values.has(fieldName) ? [{ fieldName, value: values.get(fieldName) }] : []));
}

function sameJson(a: unknown, b: unknown): boolean {
  return a === b || (a !== undefined && b !== undefined && JSON.stringify(a) === JSON.stringify(b));
}

function sameOrder(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}
