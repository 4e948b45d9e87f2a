import * as v from 'valibot';
import { pointer, type InputProblem } from '../core/problem.ts';
import { FieldValue, type FieldValueOut } from '../schemas/record.ts';
import { fieldValueDuplicates, parseObject } from '../schemas/parse.ts';
import type { FieldDef, ObjectDef } from './object-def.ts';

/**
 * The rows of an import file, as plain data: NDJSON lines and RFC 4180 CSV records are read from
 * text into create elements (`fieldValues`, `isTemplate`), each row on its own, so a bad row is
 * listed and skipped while the others go on.
 */

/** One row of an NDJSON import: a create element without `objectId`. */
export const ImportLine = v.strictObject({
  fieldValues: v.array(FieldValue),
  isTemplate: v.exactOptional(v.boolean()),
});
export type ImportRow = v.InferOutput<typeof ImportLine>;

/** A row read: its element, or why it is not one. */
export type RowRead = { ok: true; row: ImportRow } | { ok: false; problems: InputProblem[] };

const notJson = (message: string): RowRead => ({
  ok: false,
  problems: [{ pointer: '', code: 'invalid_row', message }],
});

/** An NDJSON line as a row. */
export function ndjsonRow(line: string): RowRead {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return notJson('the line is not JSON');
  }
  const parsed = parseObject(ImportLine, value, (line) => fieldValueDuplicates(line, ''));
  return parsed.ok ? { ok: true, row: parsed.value } : { ok: false, problems: [...parsed.problems] };
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

/**
 * Problems with a CSV header for an object: every column names a field of it, once. A header that
 * is not one is refused before the file is kept.
 */
export function headerProblems(columns: readonly string[], def: ObjectDef): InputProblem[] {
  const seen = new Set<string>();
  return columns.flatMap((name, i) => {
    const at = { pointer: pointer('', 'columns', i) };
    if (seen.has(name)) return [{ ...at, code: 'duplicate', message: `column ${name} appears twice` }];
    seen.add(name);
    return def.fields.some((f) => f.name === name)
      ? []
      : [{ ...at, code: 'unknown_field', message: `column ${JSON.stringify(name)} is not a field of the object` }];
  });
}

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** A CSV cell as a value of `field`: parsed by its type; what does not parse stays text, for the check to refuse. */
export function cellValue(field: FieldDef | undefined, cell: string): unknown {
  switch (field?.type) {
    case 'number':
    case 'integer':
      return NUMBER.test(cell) ? Number(cell) : cell;
    case 'boolean':
      return cell === 'true' ? true : cell === 'false' ? false : cell;
    case 'json':
      try {
        return JSON.parse(cell) as unknown;
      } catch {
        return cell;
      }
    case 'reference':
      if (field.multiple !== true) return NUMBER.test(cell) ? Number(cell) : cell;
      return listCell(cell, (item) => (NUMBER.test(item) ? Number(item) : item));
    case 'multiSelect':
      return listCell(cell, (item) => item);
    default:
      return cell;
  }
}

/** A cell holding several values: a JSON array, or values separated by `;`. */
function listCell(cell: string, item: (text: string) => unknown): unknown {
  if (cell.startsWith('[')) {
    try {
      return JSON.parse(cell) as unknown;
    } catch {
      return cell;
    }
  }
  return cell.split(';').map((part) => item(part.trim()));
}

/** A CSV record as a row under `columns`: an empty cell is no value. */
export function csvRow(record: CsvRecord, columns: readonly string[], def: ObjectDef): RowRead {
  if ('error' in record) return notJson(`the record is not CSV: ${record.error}`);
  if (record.cells.length !== columns.length)
    return notJson(`expected ${columns.length} cells, found ${record.cells.length}`);
  const fieldValues: FieldValueOut[] = [];
  record.cells.forEach((cell, i) => {
    const name = columns[i] as string;
    if (cell !== '')
      fieldValues.push({
        fieldName: name,
        value: cellValue(
          def.fields.find((f) => f.name === name),
          cell,
        ),
      });
  });
  return { ok: true, row: { fieldValues } };
}
