import type { Diff } from './change.ts';
import type { ChangeType } from './patch.ts';
import type { FieldValueOut, RecordOut } from '../schemas/record.ts';

/** One kept change of a record as storage reads it for its history, newest first. */
export interface HistoryRow {
  version: number;
  type: ChangeType;
  at: number;
  by: number;
  /** The created record's JSON; else a diff (change.ts), or `{"record": …}` for a change kept before diffs. */
  data: string;
  /** A large diff's previous values, kept apart from `data`; else null. */
  was: string | null;
}

/** A field's value before and after one change; `null` where it had none. */
export interface FieldChange {
  fieldName: string;
  from: unknown;
  to: unknown;
}

export interface HistoryItem {
  version: number;
  at: number;
  by: number;
  type: ChangeType;
  changes: FieldChange[];
}

type Stored = Partial<Diff> & { record?: RecordOut };

/**
 * A record's history: each change with every field it changed, from and to, read from what the
 * change stores. `older` is the change just before the last of `rows` (when kept), which only a
 * change kept before diffs needs: it stored the whole record after it, so its fields' previous
 * values are that older change's, when it stored a whole record too (a change before diffs is
 * never newer than a diff); without one, they are shown as `null`.
 */
export function historyItems(
  rows: readonly HistoryRow[],
  older?: HistoryRow,
  hidden: ReadonlySet<string> = new Set(),
): HistoryItem[] {
  return rows.map((row, i) => {
    const { version, at, by, type } = row;
    // A change of hidden fields alone still shows as the version it made, with no field in it.
    const changes = changesOf(row, rows[i + 1] ?? older).filter((change) => !hidden.has(change.fieldName));
    return { version, at, by, type, changes };
  });
}

function changesOf(row: HistoryRow, before: HistoryRow | undefined): FieldChange[] {
  if (row.type === 'created') return valuesOf(JSON.parse(row.data) as RecordOut).map(created);
  const stored = JSON.parse(row.data) as Stored;
  if (stored.record !== undefined) return compared(wholeBefore(before), stored.record.fieldValues);
  const was = row.was === null ? (stored.was ?? []) : (JSON.parse(row.was) as FieldValueOut[]);
  const previous = new Map(was.map((entry) => [entry.fieldName, entry.value]));
  return (stored.set ?? []).map(({ fieldName, value }) => ({
    fieldName,
    from: previous.get(fieldName) ?? null,
    to: value,
  }));
}

const created = ({ fieldName, value }: FieldValueOut): FieldChange => ({ fieldName, from: null, to: value });

const valuesOf = (record: RecordOut | null): FieldValueOut[] => record?.fieldValues ?? [];

/** The values a change before diffs started from: those of the change before it, if it stored them whole. */
function wholeBefore(before: HistoryRow | undefined): FieldValueOut[] {
  if (before === undefined) return [];
  const stored = JSON.parse(before.data) as Stored & RecordOut;
  return before.type === 'created' ? valuesOf(stored) : valuesOf(stored.record ?? null);
}

/** Every field whose value differs between two whole states, in the new state's order, then those removed. */
function compared(from: readonly FieldValueOut[], to: readonly FieldValueOut[]): FieldChange[] {
  const was = new Map(from.map((entry) => [entry.fieldName, entry.value]));
  const now = new Map(to.map((entry) => [entry.fieldName, entry.value]));
  const names = [...now.keys(), ...[...was.keys()].filter((name) => !now.has(name))];
  return names
    .filter((name) => JSON.stringify(was.get(name)) !== JSON.stringify(now.get(name)))
    .map((fieldName) => ({ fieldName, from: was.get(fieldName) ?? null, to: now.get(fieldName) ?? null }));
}
