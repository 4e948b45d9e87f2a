import * as v from 'valibot';
import { MAX_BODY_DEPTH, numberProblem, parseStrictJson } from '../core/json-scan.ts';
import { pointer, type InputProblem } from '../core/problem.ts';
import type { Result } from '../core/result.ts';
import { FieldValue, RecordSchema, type FieldValueOut } from '../schemas/record.ts';
import { fieldValueDuplicates, parseObject } from '../schemas/parse.ts';
import { SYSTEM_COLUMNS } from './export.ts';
import { restored } from './csv-injection.ts';
import { mapped, type ColumnMap, type ImportMode } from './imports.ts';
import type { FieldDef, ObjectDef } from './object-def.ts';
import { isComputed } from './definition.ts';

/**
 * The rows of an import file, as plain data: NDJSON lines and RFC 4180 CSV records are read from
 * text into the writes they are (a create element, or a patch of the record a row names by id),
 * each row on its own and checked as a request body is (I-JSON, depth, what storage keeps as
 * sent), so a bad row is listed and skipped while the others go on.
 */

/** One row of an NDJSON import that creates (or upserts): a create element without `objectId`. */
export const ImportLine = v.strictObject({
  fieldValues: v.array(FieldValue),
  isTemplate: v.exactOptional(v.boolean()),
});

/** A property of a record that an export writes and an import by id leaves alone. */
const ignored = v.exactOptional(v.unknown());

/**
 * One row of an NDJSON import by id: a patch of record `id` (at `version`, when given), written
 * as an export writes a record: its other properties are ignored (a patch cannot change them).
 */
export const UpdateLine = v.strictObject({
  id: RecordSchema.entries.id,
  version: v.exactOptional(RecordSchema.entries.version),
  fieldValues: v.exactOptional(RecordSchema.entries.fieldValues),
  ownedBy: v.exactOptional(RecordSchema.entries.ownedBy),
  objectId: ignored,
  objectVersion: ignored,
  name: ignored,
  creationType: ignored,
  deleted: ignored,
  sharedWorkspaceIds: ignored,
  createdAt: ignored,
  createdBy: ignored,
  updatedAt: ignored,
  updatedBy: ignored,
  isTemplate: ignored,
});

/** A row read from a file: the write it asks for. */
export interface ImportRow {
  fieldValues: FieldValueOut[];
  isTemplate?: boolean;
  /** An update's: the record the row patches, the version it must be at, and its owner (unchanged). */
  id?: number;
  version?: number;
  ownedBy?: number | null;
  /** A CSV update's fields whose cells are empty: no value after it (a stored empty text stays). */
  blank?: string[];
}

/**
 * The row without the values of formula and lookup fields: no write gives them, so an export's
 * values of them are not written back (an export goes back in unchanged).
 */
export function withoutFormulas(row: ImportRow, def: ObjectDef): ImportRow {
  const computed = new Set(def.fields.filter(isComputed).map((field) => field.name));
  if (computed.size === 0 || !row.fieldValues.some((entry) => computed.has(entry.fieldName))) return row;
  return { ...row, fieldValues: row.fieldValues.filter((entry) => !computed.has(entry.fieldName)) };
}

/** A row read: its write, or why it is not one. */
export type RowRead = { ok: true; row: ImportRow } | { ok: false; problems: InputProblem[] };

/** Levels a row may nest: as many as a batch's element may (a body's 100 less the batch's array). */
export const ROW_DEPTH = MAX_BODY_DEPTH - 1;
/** Levels a CSV cell's JSON may nest: its value sits three levels into its row (the row, fieldValues, the entry). */
const CELL_DEPTH = ROW_DEPTH - 3;

const notARow = (message: string): RowRead => ({
  ok: false,
  problems: [{ pointer: '', code: 'invalid_row', message }],
});

/** Whether an NDJSON line holds no row: nothing but JSON's whitespace. */
export const isBlankLine = (line: string): boolean => /^[ \t\r]*$/.test(line);

/** The characters of a value a row's problem shows at most. */
export const SHOWN_VALUE = 200;

/** A value as a row's problem shows it: text as it is, anything else as JSON, at most SHOWN_VALUE characters. */
export function shownValue(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const points = [...text];
  return points.length <= SHOWN_VALUE ? text : points.slice(0, SHOWN_VALUE).join('');
}

/** The record's own keys of a plain line of an update: the record it patches and its version. */
const OWN_KEYS = new Set(['id', 'version']);

/**
 * A plain NDJSON line (`{"title": "x", "year": 1999}`, no `fieldValues`) in the form a row takes:
 * each key (as `map` names it; a key mapped to null skipped) a field's value, a `null` no value
 * (an update removes it); an update's `id` and `version` the record's own. A line of the row's
 * own form has its field names mapped alike.
 */
function rowForm(value: unknown, mode: ImportMode, map: ColumnMap | undefined): Result<unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: true, value };
  const line = value as Record<string, unknown>;
  if (Object.hasOwn(line, 'fieldValues')) {
    if (map === undefined || !Array.isArray(line.fieldValues)) return { ok: true, value };
    const fieldValues = line.fieldValues.flatMap((entry: unknown) => {
      if (
        typeof entry !== 'object' ||
        entry === null ||
        typeof (entry as { fieldName?: unknown }).fieldName !== 'string'
      )
        return [entry];
      const name = mapped(map, (entry as { fieldName: string }).fieldName);
      return name === null ? [] : [{ ...entry, fieldName: name }];
    });
    return { ok: true, value: { ...line, fieldValues } };
  }
  const row: Record<string, unknown> = {};
  const fieldValues: { fieldName: string; value: unknown }[] = [];
  const named = new Map<string, string>();
  const problems: InputProblem[] = [];
  for (const [key, item] of Object.entries(line)) {
    const name = mapped(map, key);
    if (name === null) continue;
    const before = named.get(name);
    named.set(name, key);
    if (before !== undefined) {
      const message = `${JSON.stringify(before)} and ${JSON.stringify(key)} both name ${name}`;
      problems.push({ pointer: pointer('', key), column: key, code: 'duplicate', message });
    } else if (mode === 'update' && OWN_KEYS.has(name)) row[name] = item;
    else if (item !== null || mode === 'update') fieldValues.push({ fieldName: name, value: item });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: { ...row, fieldValues } };
}

/** An NDJSON line as a row of an import in `mode` (its names as `map` names them), checked as a request body is. */
export function ndjsonRow(line: string, mode: ImportMode, map?: ColumnMap): RowRead {
  const parsed = parseStrictJson(line, ROW_DEPTH);
  if (!parsed.ok) return parsed.malformed ? notARow('the line is not JSON') : { ok: false, problems: parsed.problems };
  const duplicates = (input: unknown): InputProblem[] => fieldValueDuplicates(input, '');
  const form = rowForm(parsed.value, mode, map);
  if (!form.ok) return form;
  // A problem of a field's entry names the field and shows the value, as a write's would.
  const entries = (form.value as { fieldValues?: unknown }).fieldValues;
  const located = (problems: readonly InputProblem[]): InputProblem[] =>
    inColumns(problems, Array.isArray(entries) ? (entries as FieldValueOut[]) : []);
  if (mode !== 'update') {
    const line = parseObject(ImportLine, form.value, duplicates);
    return line.ok ? { ok: true, row: line.value } : { ok: false, problems: located(line.problems) };
  }
  const update = parseObject(UpdateLine, form.value, duplicates);
  if (!update.ok) return { ok: false, problems: located(update.problems) };
  const { id, version, fieldValues = [], ownedBy } = update.value;
  return {
    ok: true,
    row: {
      id,
      fieldValues,
      ...(version === undefined ? {} : { version }),
      ...(ownedBy === undefined ? {} : { ownedBy }),
    },
  };
}

/** A CSV record: its cells, or why it is not one (a quote out of place). */
export type CsvRecord = { cells: string[] } | { error: string };

/**
 * The complete CSV records at the start of `text` (RFC 4180: fields separated by commas, records
 * by CRLF or LF; a quoted field may hold commas, line breaks and doubled quotes), at most `max`.
 * `atEnd`: the text is the rest of the file, so a last record needs no line break. Returns the
 * records and how many characters of `text` they took.
 */
export function csvRecords(text: string, atEnd: boolean, max: number): { records: CsvRecord[]; consumed: number } {
  const records: CsvRecord[] = [];
  let i = 0;
  let consumed = 0;
  while (records.length < max && i < text.length) {
    const cells: string[] = [];
    let cell = '';
    let error: string | undefined;
    let ended = false;
    let quoted = false;
    let afterQuote = false;
    let j = i;
    for (; j < text.length; j++) {
      const c = text[j] as string;
      if (quoted) {
        if (c !== '"') cell += c;
        else if (text[j + 1] === '"') {
          cell += '"';
          j++;
        } else {
          quoted = false;
          afterQuote = true;
        }
        continue;
      }
      if (c === ',') {
        cells.push(cell);
        cell = '';
        afterQuote = false;
      } else if (c === '\n' || (c === '\r' && text[j + 1] === '\n')) {
        j += c === '\r' ? 2 : 1;
        ended = true;
        break;
      } else if (c === '"' && cell === '' && !afterQuote) quoted = true;
      else {
        error ??= afterQuote
          ? 'text after a closing quote'
          : c === '"'
            ? 'a quote inside an unquoted field'
            : undefined;
        cell += c;
      }
    }
    if (!ended) {
      // The record runs to the end of the text: complete only at the end of the file.
      if (!atEnd) break;
      if (quoted) error ??= 'a quoted field is not closed';
    }
    cells.push(cell);
    records.push(error === undefined ? { cells } : { error });
    i = j;
    consumed = j;
  }
  return { records, consumed };
}

/** Whether a CSV record is blank (an empty line): skipped, not counted as a row. */
export const blankRecord = (record: CsvRecord): boolean =>
  'cells' in record && record.cells.length === 1 && record.cells[0] === '';

/** A column of the record's own (as an export writes them), when no field of the object holds its name. */
const ownColumn = (name: string, def: ObjectDef): boolean =>
  (SYSTEM_COLUMNS as readonly string[]).includes(name) && !def.fields.some((f) => f.name === name);

/**
 * Problems with a CSV header for an import in `mode`: every column names a field of the object,
 * once; an update also takes an export's own columns (`id`, which it needs; `version`, which it
 * checks; `name` and `updatedAt`, which it ignores). Elsewhere those are unknown, never dropped in
 * silence. A header that is not one is refused before the file is kept. `columns` are the names
 * the header's cells (`sources`) are read as: a mapping's (null: skipped), else their own.
 */
export function headerProblems(
  columns: readonly (string | null)[],
  def: ObjectDef,
  mode: ImportMode,
  sources: readonly string[] = columns.map((name) => name ?? ''),
): InputProblem[] {
  const seen = new Set<string>();
  const problems = columns.flatMap((name, i): InputProblem[] => {
    if (name === null) return [];
    const at = { pointer: pointer('', 'columns', i), column: sources[i] ?? name };
    if (seen.has(name)) return [{ ...at, code: 'duplicate', message: `column ${name} appears twice` }];
    seen.add(name);
    if (def.fields.some((f) => f.name === name) || (mode === 'update' && ownColumn(name, def))) return [];
    if (name === 'id' && ownColumn(name, def))
      return [
        { ...at, code: 'not_allowed', message: 'an id column updates records: send mode=update, or leave it out' },
      ];
    const own = ownColumn(name, def) ? " (an export's own column: send mode=update to take it)" : '';
    return [
      { ...at, code: 'unknown_field', message: `column ${JSON.stringify(name)} is not a field of the object${own}` },
    ];
  });
  if (mode === 'update' && !columns.includes('id'))
    problems.push({ pointer: '/columns', code: 'required', message: 'an update by id needs an id column' });
  return problems;
}

/** A cell's value, or why the text cannot be held as written (pointers from the value). */
type CellValue = Result<unknown>;

const cellValueOf = (value: unknown): CellValue => ({ ok: true, value });

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** A number as JSON writes it, unless a double cannot hold it as written; other text stays, for the check to refuse. */
function numberCell(text: string): CellValue {
  const match = NUMBER.exec(text);
  if (match === null) return cellValueOf(text);
  const problem = numberProblem(text, match[1] ?? '', match[2], match[3]);
  return problem === undefined
    ? cellValueOf(Number(text))
    : { ok: false, problems: [{ pointer: '', code: 'invalid_number', message: problem }] };
}

/** JSON checked as a body is; text that is not JSON at all stays text. */
function jsonCell(text: string): CellValue {
  const parsed = parseStrictJson(text, CELL_DEPTH);
  if (parsed.ok) return cellValueOf(parsed.value);
  return parsed.malformed ? cellValueOf(text) : { ok: false, problems: parsed.problems };
}

/** A cell holding several values: a JSON array, or values separated by `;`. */
function listCell(cell: string, item: (text: string) => CellValue): CellValue {
  if (cell.startsWith('[')) return jsonCell(cell);
  const items = cell.split(';').map((part) => item(part.trim()));
  const problems = items.flatMap((read, k) =>
    read.ok ? [] : read.problems.map((p) => ({ ...p, pointer: pointer('', k) + (p.pointer ?? '') })),
  );
  return problems.length > 0 ? { ok: false, problems } : cellValueOf(items.map((read) => (read.ok ? read.value : '')));
}

/** A CSV cell as a value of `field`, parsed by its type; text that does not parse stays, for the check to refuse. */
export function cellValue(field: FieldDef, cell: string): CellValue {
  switch (field.type) {
    case 'number':
    case 'integer':
      return numberCell(cell);
    case 'boolean':
      return cellValueOf(cell === 'true' ? true : cell === 'false' ? false : cell);
    case 'json':
    case 'file':
      return jsonCell(cell);
    case 'reference':
      return field.multiple === true ? listCell(cell, numberCell) : numberCell(cell);
    case 'multiSelect':
      return listCell(cell, cellValueOf);
    default:
      return cellValueOf(cell);
  }
}

/** A record's own cell: an update's `id` (required) and `version` (if any); `name` and `updatedAt` are ignored. */
function ownCell(row: ImportRow, column: string, cell: string, mode: ImportMode): InputProblem[] {
  if (mode !== 'update' || (column !== 'id' && column !== 'version') || (column === 'version' && cell === ''))
    return [];
  const id = /^[0-9]{1,16}$/.test(cell) ? Number(cell) : undefined;
  if (id !== undefined && Number.isSafeInteger(id)) {
    row[column as 'id' | 'version'] = id;
    return [];
  }
  const code = cell === '' ? 'required' : 'invalid_type';
  return [{ pointer: pointer('', column), column, code, message: `expected the record's ${column}` }];
}

/**
 * A CSV record as a row of an import in `mode` under `columns`: each cell as its field's value
 * (an export's `'` before a formula taken off). An empty cell is no value: left out of a create
 * or upsert, and for an update the field's value removed.
 */
export function csvRow(
  record: CsvRecord,
  columns: readonly (string | null)[],
  def: ObjectDef,
  mode: ImportMode,
): RowRead {
  if ('error' in record) return notARow(`the record is not CSV: ${record.error}`);
  if (record.cells.length !== columns.length)
    return notARow(`expected ${columns.length} cells, found ${record.cells.length}`);
  const row: ImportRow = { fieldValues: [] };
  const problems: InputProblem[] = [];
  for (const [i, raw] of record.cells.entries()) {
    const name = columns[i];
    if (name === null || name === undefined) continue;
    const cell = restored(raw);
    const field = def.fields.find((f) => f.name === name);
    if (field !== undefined && isComputed(field)) continue;
    if (field === undefined) problems.push(...ownCell(row, name, cell, mode));
    else if (cell === '') {
      if (mode === 'update') (row.blank ??= []).push(name);
    } else {
      const at = pointer('', 'fieldValues', row.fieldValues.length, 'value');
      const value = cellValue(field, cell);
      if (!value.ok)
        problems.push(
          ...value.problems.map((p) => ({
            ...p,
            pointer: at + (p.pointer ?? ''),
            column: name,
            value: shownValue(cell),
          })),
        );
      row.fieldValues.push({ fieldName: name, value: value.ok ? value.value : cell });
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, row };
}

/**
 * Names the column (the field) of each problem of a row, beside its pointer, and shows the value
 * it is about: a problem at `/fieldValues/<i>…` is in the column of that entry's field, about its
 * value; at `/id` or `/version`, in that column.
 */
export function inColumns(problems: readonly InputProblem[], fieldValues: readonly FieldValueOut[]): InputProblem[] {
  return problems.map((problem) => {
    if (problem.column !== undefined || problem.pointer === undefined) return problem;
    const at = /^\/fieldValues\/(\d+)(?:\/|$)/.exec(problem.pointer);
    const own = /^\/(id|version)(?:\/|$)/.exec(problem.pointer);
    const entry = at === null ? undefined : fieldValues[Number(at[1])];
    if (typeof entry?.fieldName === 'string')
      return {
        ...problem,
        column: entry.fieldName,
        ...(entry.value === undefined ? {} : { value: shownValue(entry.value) }),
      };
    return own === null ? problem : { ...problem, column: own[1] as string };
  });
}
