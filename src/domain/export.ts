import type { RecordOut } from '../schemas/record.ts';
import type { ObjectDef } from './object-def.ts';

/** The columns of a CSV export: the record's own, then one per field of the object's current definition. */
export const exportColumns = (def: ObjectDef): string[] => [
  'id',
  'name',
  'version',
  'updatedAt',
  ...def.fields.map((f) => f.name),
];

/**
 * A record's cells under `columns`: a string as it is, another value as its JSON (a number, a
 * boolean, an array of ids or options, a json value); no value, an empty cell.
 */
export function exportRow(record: RecordOut, columns: readonly string[]): string[] {
  const values = new Map(record.fieldValues.map((f) => [f.fieldName, f.value]));
  const own: Record<string, unknown> = {
    id: record.id,
    name: record.name,
    version: record.version,
    updatedAt: record.updatedAt,
  };
  return columns.map((column, i) => {
    const value = i < 4 ? own[column] : values.get(column);
    return value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  });
}

/** One CSV record (RFC 4180): a cell holding a comma, a quote or a line break is quoted; lines end in CRLF. */
export const csvLine = (cells: readonly string[]): string =>
  `${cells.map((cell) => (/[",\r\n]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell)).join(',')}\r\n`;
