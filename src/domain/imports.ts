import { parseStrictJson } from '../core/json-scan.ts';
import type { InputProblem } from '../core/problem.ts';
import type { Result } from '../core/result.ts';
import { single } from './list-query.ts';
import type { ObjectDef } from './object-def.ts';

/**
 * How an import's rows become records: `create` makes a record of each; `upsert` patches the
 * record holding a row's value of a unique field (`matchOn`) and creates the others; `update`
 * patches the record a row names by `id` and creates nothing.
 */
export type ImportMode = 'create' | 'upsert' | 'update';

/** A mapping of a file's columns (CSV) or keys (NDJSON) to field names; `null` skips one; others keep their names. */
export type ColumnMap = Record<string, string | null>;

/** What `POST /workspaces/{id}/imports` takes in its query string. */
export interface ImportQuery {
  objectId: number;
  mode: ImportMode;
  matchOn?: string;
  columns?: ColumnMap;
}

/** Sources a mapping may name at most. */
export const MAX_MAPPED = 1000;

/** The `columns` parameter: a JSON object of source names to field names or null. */
function columnMapOf(text: string | undefined): { map?: ColumnMap; problems: InputProblem[] } {
  if (text === undefined) return { problems: [] };
  const parsed = parseStrictJson(text);
  if (!parsed.ok)
    return {
      problems: parsed.malformed
        ? [bad('columns', 'invalid_type', 'expected a JSON object of columns to field names or null')]
        : parsed.problems.map((problem) => ({ ...problem, query: 'columns' })),
    };
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { problems: [bad('columns', 'invalid_type', 'expected a JSON object of columns to field names or null')] };
  const entries = Object.entries(value);
  if (entries.length > MAX_MAPPED)
    return { problems: [bad('columns', 'too_many', `expected at most ${MAX_MAPPED} columns`)] };
  const problems = entries.flatMap(([source, target]) =>
    target === null || typeof target === 'string'
      ? []
      : [bad('columns', 'invalid_type', `column ${JSON.stringify(source)}: expected a field name or null`)],
  );
  return problems.length > 0 ? { problems } : { map: Object.fromEntries(entries) as ColumnMap, problems };
}

/** The name a source column or key is read as: its mapping's, else its own (`null`: skipped). */
export const mapped = (map: ColumnMap | undefined, source: string): string | null =>
  map !== undefined && Object.hasOwn(map, source) ? (map[source] as string | null) : source;

/**
 * A mapping's problems against the object: each field it names is one of the object's (or, for an
 * update, the record's `id` or `version`), named by one source only.
 */
export function columnMapProblems(def: ObjectDef, query: ImportQuery): InputProblem[] {
  const targets = Object.entries(query.columns ?? {}).flatMap(([source, target]) =>
    target === null ? [] : [[source, target] as const],
  );
  const seen = new Map<string, string>();
  return targets.flatMap(([source, target]): InputProblem[] => {
    const before = seen.get(target);
    seen.set(target, source);
    if (before !== undefined)
      return [
        bad('columns', 'duplicate', `${JSON.stringify(before)} and ${JSON.stringify(source)} both map to ${target}`),
      ];
    const own = query.mode === 'update' && (target === 'id' || target === 'version');
    if (own || def.fields.some((f) => f.name === target)) return [];
    return [
      bad(
        'columns',
        'unknown_field',
        `${JSON.stringify(source)} maps to ${JSON.stringify(target)}, no field of the object`,
      ),
    ];
  });
}

const bad = (query: string, code: string, message: string): InputProblem => ({ query, code, message });

const MODES: readonly string[] = ['create', 'upsert', 'update'] satisfies ImportMode[];

/** What an import matches rows on, if anything: a unique field (upsert) or the record's id (update, the default). */
function matchOnProblems(mode: string, matchOn: string | undefined): InputProblem[] {
  if (mode === 'upsert' && matchOn === undefined) return [bad('matchOn', 'required', 'an upsert names a unique field')];
  if (mode === 'update' && matchOn !== undefined && matchOn !== 'id')
    return [bad('matchOn', 'invalid_value', 'an update matches records by id: matchOn=id')];
  if (mode === 'create' && matchOn !== undefined) return [bad('matchOn', 'not_allowed', 'a create matches nothing')];
  return [];
}

/**
 * Parses an import's query: `objectId`, `mode` (create, the default; upsert, which names a unique
 * field in `matchOn`; or update, which matches on `id`) and `columns` (a mapping of the file's
 * columns or keys to field names).
 */
export function parseImportQuery(params: URLSearchParams): Result<ImportQuery> {
  const { values, problems } = single(params, (name) => ['objectId', 'mode', 'matchOn', 'columns'].includes(name));
  const rawId = values.get('objectId');
  const objectId = rawId !== undefined && /^[0-9]{1,16}$/.test(rawId) ? Number(rawId) : undefined;
  if (objectId === undefined || !Number.isSafeInteger(objectId))
    problems.push(bad('objectId', rawId === undefined ? 'required' : 'invalid_type', 'expected an object id'));
  const mode = values.get('mode') ?? 'create';
  if (!MODES.includes(mode)) problems.push(bad('mode', 'invalid_value', 'expected create, upsert or update'));
  const matchOn = values.get('matchOn') ?? (mode === 'update' ? 'id' : undefined);
  problems.push(...matchOnProblems(mode, matchOn));
  const columns = columnMapOf(values.get('columns'));
  problems.push(...columns.problems);
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: {
      objectId: objectId as number,
      mode: mode as ImportMode,
      ...(matchOn === undefined ? {} : { matchOn }),
      ...(columns.map === undefined ? {} : { columns: columns.map }),
    },
  };
}

/**
 * An upsert's `matchOn` must name a unique field of the object; an update's `id` must not name a
 * field (a definition saved before field names could not shadow a record's own).
 */
export function matchOnFieldProblems(def: ObjectDef, query: ImportQuery): InputProblem[] {
  if (query.matchOn === undefined) return [];
  const field = def.fields.find((f) => f.name === query.matchOn);
  if (query.mode === 'update')
    return field === undefined
      ? []
      : [bad('matchOn', 'invalid_value', 'the object has a field named id: rename it to update records by id')];
  return field?.unique === true ? [] : [bad('matchOn', 'not_unique', 'expected a unique field of the object')];
}

/** The formats an import file may have, by its Content-Type (charset, if any, utf-8). */
export function importFormat(contentType: string): 'ndjson' | 'csv' | undefined {
  const [media, ...params] = contentType.split(';').map((part) => part.trim().toLowerCase());
  const charset = params
    .find((p) => p.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  if (charset !== undefined && charset !== 'utf-8') return undefined;
  if (media === 'application/x-ndjson' || media === 'application/ndjson') return 'ndjson';
  return media === 'text/csv' ? 'csv' : undefined;
}

export type ImportStatus = 'queued' | 'running' | 'succeeded' | 'cancelled' | 'failed';

/** An import as D1 keeps it (its row in `imports`). */
export interface ImportState {
  id: number;
  user_id: number;
  workspace_id: number;
  object_id: number;
  /** An update is kept as an upsert matched on `id` that creates nothing (`updates_only`). */
  mode: 'create' | 'upsert';
  updates_only: number;
  match_on: string | null;
  format: 'ndjson' | 'csv';
  file: string;
  size: number;
  columns: string | null;
  /** The file's data rows, counted as it was kept; null for an import kept before they were counted. */
  total: number | null;
  status: ImportStatus;
  position: number;
  processed: number;
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
  created_at: number;
  finished_at: number | null;
  failure: string | null;
  request_hash: string | null;
}

export const modeOf = (state: Pick<ImportState, 'mode' | 'updates_only'>): ImportMode =>
  state.updates_only === 1 ? 'update' : state.mode;

/** An import as `GET /imports/{id}` answers it. */
export function importOut(state: ImportState): Record<string, unknown> {
  return {
    id: state.id,
    workspaceId: state.workspace_id,
    objectId: state.object_id,
    mode: modeOf(state),
    ...(state.match_on === null ? {} : { matchOn: state.match_on }),
    format: state.format,
    status: state.status,
    rows: {
      processed: state.processed,
      created: state.created,
      updated: state.updated,
      unchanged: state.unchanged,
      failed: state.failed,
      ...(state.total === null ? {} : { total: state.total }),
    },
    bytes: state.size,
    bytesRead: state.position,
    createdAt: state.created_at,
    ...(state.finished_at === null ? {} : { finishedAt: state.finished_at }),
    ...(state.failure === null ? {} : { failure: state.failure }),
  };
}

/** Rows an import reads before it stops, when every one of them failed: the rest is most likely alike. */
export const FAILING_START = 1000;

/**
 * Where an import stands once a chunk is applied, by its counts so far: `running` while rows remain;
 * at the end of the file `succeeded`, or `failed` when every row failed; `failed` early, without
 * reading the rest, once its first FAILING_START rows all failed.
 */
export function statusAfterChunk(
  counts: { processed: number; failed: number },
  atEnd: boolean,
): 'running' | 'succeeded' | 'failed' {
  const allFailed = counts.processed > 0 && counts.failed === counts.processed;
  if (allFailed && (atEnd || counts.processed >= FAILING_START)) return 'failed';
  return atEnd ? 'succeeded' : 'running';
}

/** Rows that had one problem (by code, message and column), and the pointers it was at. */
interface ProblemGroup {
  problem: InputProblem;
  rows: number;
  pointers: Set<string | undefined>;
}

/**
 * Why an import whose rows all failed failed, in words: how many rows, and the problem most rows
 * had (by code, message and column; its pointer when every such row had the same).
 */
export function allFailed(rows: readonly { errors: readonly InputProblem[] }[], atEnd: boolean): string {
  const groups = new Map<string, ProblemGroup>();
  for (const { errors } of rows) {
    const keys = new Set<string>();
    for (const problem of errors) {
      const key = JSON.stringify([problem.code, problem.message, problem.column]);
      const group = groups.get(key) ?? { problem, rows: 0, pointers: new Set() };
      group.pointers.add(problem.pointer);
      if (!keys.has(key)) group.rows++;
      keys.add(key);
      groups.set(key, group);
    }
  }
  const what = atEnd
    ? `All ${rows.length} rows failed.`
    : `The first ${rows.length} rows all failed, so the rest of the file was not read.`;
  let common: ProblemGroup | undefined;
  for (const group of groups.values()) if (common === undefined || group.rows > common.rows) common = group;
  if (common === undefined) return what;
  const { problem } = common;
  const [onePointer] = common.pointers.size === 1 ? [...common.pointers] : [];
  const where =
    problem.column !== undefined
      ? ` in column ${JSON.stringify(problem.column)}`
      : onePointer
        ? ` at ${onePointer}`
        : '';
  return `${what} Most common problem (${common.rows} of them): ${problem.message} (${problem.code})${where}.`;
}
