import { foldCase } from '../../src/core/fold.ts';
import { neutralised } from '../../src/domain/csv-injection.ts';
import type { World } from './world.ts';

/**
 * A seeded import file: a few hundred NDJSON lines or CSV records for the sim's object, each
 * data row carrying its own number in `n` (so whatever it became can be traced back to it), with
 * bad rows of every kind the reader and the checks refuse, blank lines that are no rows, unique
 * codes met twice (in other cases or spellings that fold alike), and text that tests byte
 * offsets: multi-byte characters, and in CSV quoted commas, quotes and line breaks. Some files
 * carry long notes, so a chunk's first read of 256 KiB ends inside a row.
 */

/** The fields of the sim's object: `title` required, `code` unique, `n` a row's number. */
export const FIELDS = [
  { name: 'title', type: 'text', required: true },
  { name: 'code', type: 'text', unique: true },
  { name: 'n', type: 'integer' },
  { name: 'flag', type: 'boolean' },
  { name: 'note', type: 'text' },
] as const;

export type Values = Record<string, unknown>;

export interface FileRow {
  /** The row's number among the file's data rows (1-based; blank lines are not rows). */
  number: number;
  /** What a good row sets, by field; undefined for a row that must be refused. */
  values: Values | undefined;
  /** Why a bad row must be refused (for traces). */
  bad?: string;
  /** An update's: the record the row names, and the fields its empty CSV cells remove. */
  id?: number;
  blank?: string[];
}

export interface ImportFile {
  mode: 'create' | 'upsert' | 'update';
  format: 'ndjson' | 'csv';
  contentType: string;
  bytes: Uint8Array;
  rows: FileRow[];
  /** The codes the file draws from (in their first spelling): clients race the import on them. */
  codes: string[];
}

/**
 * Shapes of a file that met faults of the service when this simulation was written, now drawn in
 * every run: `bom`, a CSV file that starts with a byte order mark; `match`, upsert rows whose code
 * is not text (`true`); `twice`, upsert rows that give their code twice. (`recode`, clients that
 * change codes while the import matches on them, is the run's: see imports-run.ts.)
 */
export interface FileOptions {
  bugs: ReadonlySet<string>;
}

const PIECES = ['a', 'b', 'Ä', 'ß', 'Σ', 'ς', 'é', '𝄞', '字', ' ', ',', '"', "'", ';', '-', '\t'];
const CSV_PIECES = [...PIECES, '\n', '\r\n'];

/** The fold of a code, as the unique index compares them. */
export const codeKey = (code: unknown): string | undefined => (typeof code === 'string' ? foldCase(code) : undefined);

/** Another spelling of a code that folds the same. */
function respell(world: World, code: string): string {
  switch (world.between(0, 3)) {
    case 0:
      return code.toUpperCase();
    case 1:
      return code.toLowerCase();
    case 2:
      return code.replace(/ss/g, 'ß').replace(/σ/g, 'Σ');
    default:
      return code;
  }
}

export function generateFile(world: World, options: FileOptions): ImportFile {
  const mode = world.chance(0.5) ? 'upsert' : 'create';
  const format = world.chance(0.5) ? 'ndjson' : 'csv';
  const count = world.between(120, 300);
  const big = world.chance(0.08);
  const shapes = ['k', 'Äk', 'σk', 'ssk'];
  const codes = Array.from({ length: world.between(Math.ceil(count / 4), count) }, (_, i) => `${shapes[i % 4]}${i}`);
  const text = (pieces: readonly string[], length: number): string =>
    Array.from({ length }, () => world.pick(pieces)).join('');
  const rows: FileRow[] = [];
  const lines: (string | Uint8Array)[] = [];
  const newline = world.chance(0.5) ? '\n' : '\r\n';
  const optional = FIELDS.filter((f) => f.name === 'flag' || f.name === 'note').filter(() => world.chance(0.7));
  const columns = shuffle(world, ['title', 'code', 'n', ...optional.map((f) => f.name)]);
  const blank = format === 'ndjson' ? ['', '   '] : [''];
  for (let number = 1; number <= count; number++) {
    while (world.chance(0.03)) lines.push(world.pick(blank));
    const values: Values = {
      title: `r${number} ${text(format === 'csv' ? CSV_PIECES : PIECES, world.between(0, 6))}`,
    };
    if (mode === 'upsert' || world.chance(0.85)) values.code = respell(world, world.pick(codes));
    values.n = number;
    if (columns.includes('flag') && world.chance(0.6)) values.flag = world.chance(0.5);
    if (columns.includes('note') && (big || world.chance(0.2)))
      values.note = text(format === 'csv' ? CSV_PIECES : PIECES, big ? world.between(1_500, 2_500) : 8);
    let bad = world.chance(0.07) ? badKind(world, mode, format, options) : undefined;
    // A file whose first line is no JSON object is refused whole, before it is kept.
    if (number === 1 && format === 'ndjson' && ['not json', 'not an object', 'not utf-8'].includes(bad ?? ''))
      bad = 'extra key';
    rows.push({ number, values: bad === undefined ? values : undefined, ...(bad === undefined ? {} : { bad }) });
    lines.push(format === 'ndjson' ? ndjsonLine(values, bad, world) : csvLine(values, columns, bad, world));
  }
  const encoder = new TextEncoder();
  const parts: Uint8Array[] = [];
  const bom = world.chance(0.2) && options.bugs.has('bom');
  if (format === 'csv') parts.push(encoder.encode(`${bom ? '\uFEFF' : ''}${columns.join(',')}${newline}`));
  lines.forEach((line, i) => {
    parts.push(typeof line === 'string' ? encoder.encode(line) : line);
    if (i < lines.length - 1 || world.chance(0.5)) parts.push(encoder.encode(newline));
  });
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  return {
    mode,
    format,
    contentType: format === 'ndjson' ? 'application/x-ndjson' : 'text/csv; charset=utf-8',
    bytes,
    rows,
    codes,
  };
}

/**
 * A seeded file of an update by id (`mode=update`): rows that name the given records (a record
 * often twice), each setting a title and its own number `n` (so a good row always changes its
 * record) and sometimes `flag` and `note`; in CSV an optional column's empty cell removes its
 * value, in NDJSON a line may carry a record's other properties as an export writes them
 * (ignored). Bad rows name no record, give a stale version, an `n` of the wrong type or no title.
 */
export function generateUpdateFile(world: World, ids: readonly number[]): ImportFile {
  const format = world.chance(0.5) ? 'ndjson' : 'csv';
  const optional = ['flag', 'note'].filter(() => world.chance(0.7));
  const withVersion = world.chance(0.5);
  const columns = ['id', ...(withVersion ? ['version'] : []), ...shuffle(world, ['title', 'n', ...optional])];
  const newline = world.chance(0.5) ? '\n' : '\r\n';
  const rows: FileRow[] = [];
  const lines: string[] = format === 'csv' ? [columns.join(',')] : [];
  const count = world.between(60, 200);
  for (let number = 1; number <= count; number++) {
    const id = world.pick(ids);
    const values: Values = {
      title: `u${number} ${randomText(world, format === 'csv' ? CSV_PIECES : PIECES, 4)}`,
      n: number,
    };
    if (optional.includes('flag') && world.chance(0.6)) values.flag = world.chance(0.5);
    if (optional.includes('note') && world.chance(0.6)) values.note = randomText(world, PIECES, 5);
    // An empty CSV cell is no value: an empty note there is one removed.
    if (format === 'csv' && values.note === '') delete values.note;
    const kinds = [
      'no record',
      'n as text',
      'no title',
      ...(format === 'csv' && !withVersion ? [] : ['stale version']),
    ];
    const bad = world.chance(0.08) ? world.pick(kinds) : undefined;
    const blank = format === 'csv' ? optional.filter((name) => values[name] === undefined) : undefined;
    rows.push({
      number,
      id,
      values: bad === undefined ? values : undefined,
      ...(bad ? { bad } : {}),
      ...(blank ? { blank } : {}),
    });
    const sent: Values = { ...values, ...(bad === 'n as text' ? { n: `x${number}` } : {}) };
    // No title: an empty cell removes it, a line sets it null; either fails (it is required).
    if (bad === 'no title') sent.title = format === 'csv' ? undefined : null;
    const target = bad === 'no record' ? 99_999_999 : id;
    const version = bad === 'stale version' ? 99_999 : undefined;
    lines.push(
      format === 'csv'
        ? columns
            .map((name) =>
              name === 'id' ? String(target) : name === 'version' ? (version ?? '') : csvCell(sent[name], world),
            )
            .map(String)
            .join(',')
        : JSON.stringify({
            id: target,
            ...(version === undefined ? {} : { version }),
            ...(world.chance(0.3) ? { name: 'ignored', updatedAt: 1, objectId: 0 } : {}),
            fieldValues: shuffle(
              world,
              Object.entries(sent).map(([fieldName, value]) => ({ fieldName, value })),
            ),
          }),
    );
  }
  return {
    mode: 'update',
    format,
    contentType: format === 'ndjson' ? 'application/x-ndjson' : 'text/csv; charset=utf-8',
    bytes: new TextEncoder().encode(lines.join(newline) + newline),
    rows,
    codes: [],
  };
}

const randomText = (world: World, pieces: readonly string[], length: number): string =>
  Array.from({ length: world.between(0, length) }, () => world.pick(pieces)).join('');

function shuffle<T>(world: World, items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = world.between(0, i);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** How a bad row is bad. A row without a title is refused only by a create (an upsert may patch). */
function badKind(world: World, mode: string, format: string, options: FileOptions): string {
  const kinds =
    format === 'ndjson'
      ? ['not json', 'not an object', 'extra key', 'n as text', 'unknown field', 'title a number', 'not utf-8']
      : ['cells missing', 'quote inside', 'n as text', 'flag maybe', 'text after quote'];
  if (mode === 'create') kinds.push('no title');
  if (mode === 'upsert') kinds.push('no code');
  if (mode === 'upsert' && format === 'ndjson') kinds.push('code null');
  if (mode === 'upsert' && format === 'ndjson') kinds.push('code true', 'code twice');
  const kind = world.pick(kinds);
  if (kind === 'code true' && !options.bugs.has('match')) return 'code null';
  if (kind === 'code twice' && !options.bugs.has('twice')) return 'code null';
  return kind;
}

function ndjsonLine(values: Values, bad: string | undefined, world: World): string | Uint8Array {
  const entries = shuffle(
    world,
    Object.entries(values).map(([fieldName, value]) => ({ fieldName, value })),
  );
  const line = (fieldValues: unknown[], extra: object = {}) => JSON.stringify({ fieldValues, ...extra });
  const set = (name: string, value: unknown) =>
    entries.map((e) => (e.fieldName === name ? { fieldName: name, value } : e));
  switch (bad) {
    case undefined:
      return line(entries);
    case 'not json':
      return line(entries).slice(0, -3);
    case 'not an object':
      return JSON.stringify(entries);
    case 'extra key':
      return line(entries, { extra: true });
    case 'n as text':
      return line(set('n', `${values.n as number}`));
    case 'unknown field':
      return line([...entries, { fieldName: 'nope', value: 1 }]);
    case 'title a number':
      return line(set('title', 5));
    case 'no title':
      return line(entries.filter((e) => e.fieldName !== 'title'));
    case 'no code':
      return line(entries.filter((e) => e.fieldName !== 'code'));
    case 'code null':
      return line(set('code', null));
    case 'code true':
      return line(set('code', true));
    case 'code twice':
      return line([...entries, { fieldName: 'code', value: `${values.code as string}-again` }]);
    default: {
      // Not UTF-8: a lone continuation byte and an overlong start inside the line.
      const text = new TextEncoder().encode(line(entries));
      return Uint8Array.from([...text.slice(0, 5), 0x80, 0xc0, 0xaf, ...text.slice(5)]);
    }
  }
}

const quoted = (cell: string): string => `"${cell.replace(/"/g, '""')}"`;

/** A cell as an export writes it: a value that reads as a formula neutralised (the import restores it). */
function csvCell(value: unknown, world: World): string {
  if (value === undefined) return '';
  const text = neutralised(String(value));
  return /[",\r\n]/.test(text) || world.chance(0.2) ? quoted(text) : text;
}

function csvLine(values: Values, columns: readonly string[], bad: string | undefined, world: World): string {
  const cells = columns.map((name) => csvCell(values[name], world));
  const at = (name: string) => columns.indexOf(name);
  switch (bad) {
    case 'cells missing':
      return cells.slice(0, -1).join(',');
    case 'quote inside':
      cells[at('title')] = `x"${String(values.n)}`;
      break;
    case 'text after quote':
      cells[at('title')] = `"t${String(values.n)}"x`;
      break;
    case 'n as text':
      cells[at('n')] = `x${String(values.n)}`;
      break;
    case 'flag maybe':
      cells[at('flag') < 0 ? at('n') : at('flag')] = 'maybe';
      break;
    case 'no title':
      cells[at('title')] = '';
      break;
    case 'no code':
      cells[at('code')] = '';
      break;
  }
  return cells.join(',');
}

/** Whether two values are the same as stored (JSON equality). */
export const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** A row's values as a record's field values hold them, checked by name. */
export function holds(state: Values, values: Values): boolean {
  return Object.entries(values).every(([name, value]) => same(state[name], value));
}

/** Whether a record's values are exactly a row's (no field more, none less). */
export function equals(state: Values, values: Values): boolean {
  return Object.keys(state).length === Object.keys(values).length && holds(state, values);
}

/** The folded code of a row's values, if it has one. */
export const rowKey = (values: Values | undefined): string | undefined => codeKey(values?.code);
