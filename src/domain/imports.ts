import type { InputProblem } from '../core/problem.ts';
import type { Result } from '../core/result.ts';
import type { ObjectDef } from './object-def.ts';

/** What `POST /workspaces/{id}/imports` takes in its query string. */
export interface ImportQuery {
  objectId: number;
  mode: 'create' | 'upsert';
  matchOn?: string;
}

const bad = (query: string, code: string, message: string): InputProblem => ({ query, code, message });

/** Parses an import's query: `objectId`, `mode` (create, the default, or upsert) and, for an upsert, `matchOn`. */
export function parseImportQuery(params: URLSearchParams): Result<ImportQuery> {
  const problems: InputProblem[] = [];
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (!['objectId', 'mode', 'matchOn'].includes(name))
      problems.push(bad(name, 'unknown_parameter', 'unknown query parameter'));
    else if (seen.has(name)) problems.push(bad(name, 'duplicate', 'parameter given more than once'));
    seen.add(name);
  }
  const rawId = params.get('objectId');
  const objectId = rawId !== null && /^[0-9]{1,16}$/.test(rawId) ? Number(rawId) : undefined;
  if (objectId === undefined || !Number.isSafeInteger(objectId))
    problems.push(bad('objectId', rawId === null ? 'required' : 'invalid_type', 'expected an object id'));
  const mode = params.get('mode') ?? 'create';
  if (mode !== 'create' && mode !== 'upsert') problems.push(bad('mode', 'invalid_value', 'expected create or upsert'));
  const matchOn = params.get('matchOn') ?? undefined;
  if (mode === 'upsert' && matchOn === undefined)
    problems.push(bad('matchOn', 'required', 'an upsert names a unique field'));
  if (mode !== 'upsert' && matchOn !== undefined)
    problems.push(bad('matchOn', 'not_allowed', 'only an upsert matches'));
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: { objectId: objectId as number, mode, ...(matchOn === undefined ? {} : { matchOn }) } as ImportQuery,
  };
}

/** An upsert's `matchOn` must name a unique field of the object. */
export function matchOnProblems(def: ObjectDef, query: ImportQuery): InputProblem[] {
  if (query.matchOn === undefined) return [];
  const field = def.fields.find((f) => f.name === query.matchOn);
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
  mode: 'create' | 'upsert';
  match_on: string | null;
  format: 'ndjson' | 'csv';
  file: string;
  size: number;
  columns: string | null;
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

/** An import as `GET /imports/{id}` answers it. */
export function importOut(state: ImportState): Record<string, unknown> {
  return {
    id: state.id,
    workspaceId: state.workspace_id,
    objectId: state.object_id,
    mode: state.mode,
    ...(state.match_on === null ? {} : { matchOn: state.match_on }),
    format: state.format,
    status: state.status,
    rows: {
      processed: state.processed,
      created: state.created,
      updated: state.updated,
      unchanged: state.unchanged,
      failed: state.failed,
    },
    createdAt: state.created_at,
    ...(state.finished_at === null ? {} : { finishedAt: state.finished_at }),
    ...(state.failure === null ? {} : { failure: state.failure }),
  };
}
