import { parseStrictJson } from '../core/json-scan.ts';
import type { InputProblem } from '../core/problem.ts';
import type { RecordOut } from '../schemas/record.ts';
import { neutralised } from './csv-injection.ts';
import { single } from './list-query.ts';
import type { FieldDef, ObjectDef } from './object-def.ts';
import { isReadElsewhere } from './definition.ts';

/**
 * A CSV export: a header, then a line per record, in the shape an import reads back
 * (`mode=update&matchOn=id`): the record's own columns, then a column per field of the current
 * definition, a string as it is and any other value as its JSON.
 */

/** The record's own columns: an import by id reads `id` and `version`; `name` and `updatedAt` are for people. */
export const SYSTEM_COLUMNS = ['id', 'name', 'version', 'updatedAt'] as const;
export type SystemColumn = (typeof SYSTEM_COLUMNS)[number];

/**
 * The columns of an object's export. A record's own column is left out when a field holds its
 * name (a definition saved before such names were refused), so no column name appears twice
 * and each means one thing. A lookup or a rollup is read from other records, not this one: left out.
 */
export const exportColumns = (def: ObjectDef): string[] => [
  ...SYSTEM_COLUMNS.filter((column) => !def.fields.some((f) => f.name === column)),
  ...def.fields.filter((f) => !isReadElsewhere(f)).map((f) => f.name),
];

/** Whether cells a spreadsheet would run as a formula are neutralised (the default) or kept as they are. */
export type Formulas = 'escape' | 'keep';

/** The records in view of an export: a query's `filter` and `sort` (as sent, JSON) and `search`. */
export interface ExportView {
  filter?: unknown;
  sort?: unknown;
  search?: string;
}

/** What `GET /workspaces/{id}/records/export` takes in its query string. */
export interface ExportQuery {
  objectId: number;
  format: 'ndjson' | 'csv';
  formulas: Formulas;
  /** Only the records a query would find, in its order; none: every live record, in id order. */
  view?: ExportView;
}

/** A JSON query parameter's value, read as strictly as a body is (a member twice: refused), or its problems. */
function jsonParam(name: string, text: string | undefined): { value?: unknown; problems: InputProblem[] } {
  if (text === undefined) return { problems: [] };
  const parsed = parseStrictJson(text);
  if (parsed.ok) return { value: parsed.value, problems: [] };
  if (parsed.malformed)
    return { problems: [bad(name, 'invalid_type', `expected the ${name} as a query takes it, in JSON`)] };
  return { problems: parsed.problems.map((problem) => ({ ...problem, query: name })) };
}

/**
 * The body of the query an export's view is: its filter, sort and search, a page a time. The
 * object is required apart (see `forObject`), so a problem points into what was sent.
 */
export const viewQueryBody = (view: ExportView, limit: number): Record<string, unknown> => ({
  ...(view.filter === undefined ? {} : { filter: view.filter }),
  ...(view.sort === undefined ? {} : { sort: view.sort }),
  ...(view.search === undefined ? {} : { search: view.search }),
  limit,
});

/** A problem of the view's query as the export's: in its query parameter, the pointer into its JSON. */
export function inParameter(problem: InputProblem): InputProblem {
  const match = /^\/(filter|sort|search)(\/.*)?$/.exec(problem.pointer ?? '');
  if (match === null) return problem;
  const { pointer: _pointer, ...rest } = problem;
  return { ...rest, query: match[1] as string, ...(match[2] === undefined ? {} : { pointer: match[2] }) };
}

const bad = (query: string, code: string, message: string): InputProblem => ({ query, code, message });

/**
 * `objectId` (required), `format` (ndjson, the default, or csv), for a CSV export `formulas` (escape
 * or keep), and the view: `filter` and `sort` (JSON, as a query takes them) and `search`.
 */
export function parseExportQuery(params: URLSearchParams): { query?: ExportQuery; problems: InputProblem[] } {
  const { values, problems } = single(params, (name) =>
    ['objectId', 'format', 'formulas', 'filter', 'sort', 'search'].includes(name),
  );
  const rawId = values.get('objectId') ?? '';
  const objectId = /^[0-9]{1,16}$/.test(rawId) ? Number(rawId) : undefined;
  if (objectId === undefined) problems.push(bad('objectId', 'required', 'expected an object id'));
  const format = values.get('format') ?? 'ndjson';
  if (format !== 'ndjson' && format !== 'csv') problems.push(bad('format', 'invalid_value', 'expected ndjson or csv'));
  const formulas = values.get('formulas') ?? 'escape';
  if (formulas !== 'escape' && formulas !== 'keep')
    problems.push(bad('formulas', 'invalid_value', 'expected escape or keep'));
  else if (values.has('formulas') && format !== 'csv')
    problems.push(bad('formulas', 'not_allowed', 'only a CSV export holds formulas'));
  const filter = jsonParam('filter', values.get('filter'));
  const sort = jsonParam('sort', values.get('sort'));
  problems.push(...filter.problems, ...sort.problems);
  const search = values.get('search');
  if (problems.length > 0 || objectId === undefined) return { problems };
  const view: ExportView = {
    ...(filter.value === undefined ? {} : { filter: filter.value }),
    ...(sort.value === undefined ? {} : { sort: sort.value }),
    ...(search === undefined ? {} : { search }),
  };
  const viewed = Object.keys(view).length > 0;
  return {
    query: {
      objectId,
      format: format as ExportQuery['format'],
      formulas: formulas as Formulas,
      ...(viewed ? { view } : {}),
    },
    problems,
  };
}

/** A field's value as a cell: no value empty, a string as it is (a `json` one as JSON), anything else as JSON. */
function cellOf(field: FieldDef | undefined, value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' && field?.type !== 'json' ? value : JSON.stringify(value);
}

/** A record's cells under `columns` (from exportColumns). */
export function exportRow(record: RecordOut, def: ObjectDef, columns: readonly string[], formulas: Formulas): string[] {
  const values = new Map(record.fieldValues.map((f) => [f.fieldName, f.value]));
  const own: Record<SystemColumn, string> = {
    id: String(record.id),
    name: record.name,
    version: String(record.version),
    updatedAt: String(record.updatedAt),
  };
  return columns.map((column) => {
    const field = def.fields.find((f) => f.name === column);
    const cell = field === undefined ? (own[column as SystemColumn] ?? '') : cellOf(field, values.get(column));
    return formulas === 'escape' ? neutralised(cell) : cell;
  });
}

/** One CSV record (RFC 4180): a cell holding a comma, a quote or a line break is quoted; lines end in CRLF. */
export const csvLine = (cells: readonly string[]): string =>
  `${cells.map((cell) => (/[",\r\n]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell)).join(',')}\r\n`;
