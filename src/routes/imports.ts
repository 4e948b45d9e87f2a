import { seesObject } from '../domain/access.ts';
import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { concatBytes } from '../core/bytes.ts';
import { rowCounter } from '../domain/import-count.ts';
import { blankRecord, csvRecords, headerProblems, isBlankLine } from '../domain/import-rows.ts';
import {
  columnMapProblems,
  importFormat,
  importOut,
  mapped,
  matchOnFieldProblems,
  parseImportQuery,
  type ImportQuery,
} from '../domain/imports.ts';
import type { ObjectDef } from '../domain/object-def.ts';
import { keyHashOf, sha256Hex } from '../http/auth.ts';
import {
  forbidden,
  HttpError,
  invalidBody,
  invalidQuery,
  notFound,
  unauthorized,
  type InputProblem,
} from '../http/errors.ts';
import { cursorKey, readCursor, signCursor } from '../http/cursor.ts';
import { tenantPathIds } from '../http/params.ts';
import { parsePageQuery } from '../domain/list-query.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import { queryOf } from '../http/query.ts';
import { json } from '../http/respond.ts';
import { keyHeader } from '../write/claim.ts';
import { dropFile } from '../write/import-chunk.ts';
import { Imports, type ImportState } from '../storage/imports.ts';

/**
 * Imports: `POST /workspaces/{id}/imports` keeps the file in R2 and queues it; an object per
 * import applies it in the background (src/import-object.ts). The importer follows it with
 * `GET /imports/{id}` and its skipped rows with `GET /imports/{id}/errors`, and may cancel it.
 */

/** The largest file an import takes: what a Worker may receive. */
export const MAX_IMPORT_BYTES = 100 * 1024 * 1024;
/** The start of a file read before it is kept: the first line or header must lie within it. */
const HEAD_BYTES = 1024 * 1024;

const badFile = (detail: string, errors?: InputProblem[]): HttpError =>
  new HttpError(400, {
    code: 'invalid_request',
    title: 'Import file is invalid',
    detail,
    ...(errors ? { errors } : {}),
  });

export async function createImport(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  const sent = queryOf(request.url);
  const query = parseImportQuery(sent.params);
  const key = keyHeader(request);
  const known = await context.cached.createContext(keyHash, query.ok ? [query.value.objectId] : [], true);
  const caller = known.caller;
  if (caller === undefined) throw unauthorized();
  const problems = [...sent.problems, ...(query.ok ? [] : query.problems), ...key.problems];
  if (!query.ok || problems.length > 0) throw invalidQuery(problems);
  const format = importFormat(request.headers.get('Content-Type') ?? '');
  if (format === undefined)
    throw new HttpError(415, {
      code: 'unsupported_media_type',
      detail: 'Send Content-Type: application/x-ndjson or text/csv (UTF-8).',
    });
  const declared = request.headers.get('Content-Length') ?? '';
  const length = /^[0-9]{1,16}$/.test(declared) ? Number(declared) : NaN;
  if (!Number.isSafeInteger(length))
    throw badFile('Send the file with its Content-Length.', [
      { header: 'Content-Length', code: 'required', message: 'expected the length of the file' },
    ]);
  if (length > MAX_IMPORT_BYTES)
    throw new HttpError(413, { code: 'payload_too_large', detail: `The limit is ${MAX_IMPORT_BYTES} bytes.` });
  if (!caller.roles.has(workspaceId)) throw notFound('Workspace');
  const def = known.objects.get(query.value.objectId);
  // An object the caller's role does not list is as missing, before anything else is said of it.
  if (def === undefined || !def.workspaceIds.includes(workspaceId) || !seesObject(caller, workspaceId, def.id))
    throw notFound('Object');
  if (caller.roles.get(workspaceId) !== 'editor') throw forbidden('Importing needs role editor in the workspace.');
  const matchProblems = [...matchOnFieldProblems(def, query.value), ...columnMapProblems(def, query.value)];
  if (matchProblems.length > 0) throw invalidQuery(matchProblems);

  const file = `imports/${crypto.randomUUID()}`;
  const kept = await keep(context, request, file, length, format, def, query.value);
  const requestHash =
    key.key === undefined ? undefined : await sha256Hex(JSON.stringify([key.key.path, query.value, format, kept.hash]));
  const imports = new Imports(context.db, context.meter);
  const { state, again } = await imports.create({
    userId: caller.userId,
    workspaceId,
    objectId: def.id,
    mode: query.value.mode,
    matchOn: query.value.matchOn,
    format,
    file,
    size: length,
    columns: format === 'csv' ? kept.columns : query.value.columns,
    total: kept.total,
    start: kept.start,
    now: Date.now(),
    key: key.key?.key,
    requestHash,
  });
  if (again) {
    await context.env.IMPORT_FILES.delete(file);
    if (state.request_hash !== requestHash || state.workspace_id !== workspaceId)
      throw new HttpError(422, {
        code: 'unprocessable',
        title: 'Idempotency-Key reused',
        detail: 'This key was used for another request.',
        errors: [
          {
            header: 'Idempotency-Key',
            code: 'idempotency_key_reused',
            message: 'the key was used for a different request',
          },
        ],
      });
    return accepted(state, { 'Idempotent-Replayed': 'true' });
  }
  await startImport(context, state.id);
  return accepted(state);
}

const accepted = (state: ImportState, headers: Record<string, string> = {}): Response =>
  json(importOut(state), 202, { Location: `/imports/${state.id}`, ...headers });

/** Hands the import to its object; should this be lost, the Cron Trigger starts it. */
async function startImport(context: Context, id: number): Promise<void> {
  try {
    await context.env.IMPORTS.getByName(String(id)).start(id);
  } catch (error) {
    console.error(JSON.stringify({ message: 'import not started', id, error: String(error) }));
  }
}

/**
 * Streams the body into R2 as `file`, after reading its start: a file that is not NDJSON or CSV
 * of this object at all is refused (400) before anything is kept. Returns the body's SHA-256 (what
 * a keyed request is compared by) and its data rows, both taken as it streams by, a CSV file's
 * columns and where its rows start.
 */
async function keep(
  context: Context,
  request: Request,
  file: string,
  length: number,
  format: 'ndjson' | 'csv',
  def: ObjectDef,
  query: ImportQuery,
): Promise<{ hash: string; total: number; columns?: (string | null)[]; start: number }> {
  const reader = (request.body ?? new ReadableStream<Uint8Array>()).getReader();
  const head: Uint8Array[] = [];
  let read = 0;
  let done = false;
  while (read < HEAD_BYTES && !done) {
    const next = await reader.read();
    if (next.done) done = true;
    else {
      head.push(next.value);
      read += next.value.byteLength;
    }
  }
  const bytes = concatBytes(head);
  const start = format === 'csv' ? csvHeader(bytes, done, def, query) : ndjsonHead(bytes, done);
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of head) controller.enqueue(chunk);
      if (done) controller.close();
    },
    async pull(controller) {
      const next = await reader.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
  const [toFile, toHash] = body.tee();
  const digest = new crypto.DigestStream('SHA-256');
  const rows = rowCounter(format);
  const counting = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      rows.add(chunk);
      controller.enqueue(chunk);
    },
  });
  // Each side settles on its own (a body longer or shorter than its length fails both): every
  // failure is caught here, none is left unhandled.
  const hashing = toHash
    .pipeThrough(counting)
    .pipeTo(digest)
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  const fixed = new FixedLengthStream(length);
  const piping = toFile.pipeTo(fixed.writable).then(
    () => undefined,
    (error: unknown) => error,
  );
  try {
    await context.env.IMPORT_FILES.put(file, fixed.readable);
    const failures = (await Promise.all([piping, hashing])).filter((error) => error !== undefined);
    if (failures.length > 0) throw failures[0];
  } catch {
    await Promise.all([piping, hashing]);
    await context.env.IMPORT_FILES.delete(file).catch(() => undefined);
    throw badFile('The body ended before its Content-Length, or ran past it.');
  }
  const hash = [...new Uint8Array(await digest.digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
  return { hash, total: rows.total(), ...start };
}

/** A decoder of its own per file: one that streams keeps state between calls. */
const utf8 = (): TextDecoder => new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The file's first line must be a JSON object: else it is not NDJSON at all. */
function ndjsonHead(bytes: Uint8Array, whole: boolean): { start: number } {
  let start = 0;
  for (;;) {
    const end = bytes.indexOf(0x0a, start);
    const line = bytes.subarray(start, end < 0 ? bytes.length : end);
    let text: string;
    try {
      text = utf8().decode(line, { stream: end < 0 && !whole });
    } catch {
      throw badFile('The file is not UTF-8 text.');
    }
    // A first line longer than what was read: it must at least start as a JSON object (it is
    // checked whole, as a row, when applied).
    if (end < 0 && !whole) {
      if (!/^\s*\{/.test(text)) throw badFile('The file is not NDJSON: its first line does not start a JSON object.');
      return { start: 0 };
    }
    if (!isBlankLine(text)) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw badFile('The file is not NDJSON: its first line is not JSON.');
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw badFile('The file is not NDJSON of create elements: its first line is not a JSON object.');
      return { start: 0 };
    }
    if (end < 0) throw badFile('The file holds no rows.');
    start = end + 1;
  }
}

/**
 * A CSV file's header: columns naming fields of the object (as the query's `columns` map them),
 * each once. Its rows start after it. Only the header's lines are decoded: a row further on that
 * is not UTF-8 fails as a row.
 */
function csvHeader(
  bytes: Uint8Array,
  whole: boolean,
  def: ObjectDef,
  { mode, columns: map }: ImportQuery,
): { columns: (string | null)[]; start: number } {
  // The decoder drops a byte-order mark: its three bytes still come before the header.
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  const decoder = utf8();
  let text = '';
  let at = 0;
  for (;;) {
    const newline = bytes.indexOf(0x0a, at);
    const last = newline < 0;
    if (last && !whole) throw badFile(`The header is longer than ${HEAD_BYTES} bytes.`);
    const to = last ? bytes.length : newline + 1;
    try {
      text += decoder.decode(bytes.subarray(at, to), { stream: !last });
    } catch {
      throw badFile('The header row is not UTF-8 text.');
    }
    at = to;
    const { records, consumed } = csvRecords(text, last, 1);
    const header = records[0];
    if (header === undefined && !last) continue;
    if (header === undefined || blankRecord(header)) throw badFile('The file holds no header row.');
    if ('error' in header) throw badFile(`The header row is not CSV: ${header.error}.`);
    const columns = header.cells.map((cell) => mapped(map, cell));
    const wrong = headerProblems(columns, def, mode, header.cells);
    if (wrong.length > 0)
      throw badFile(
        'The header row must name fields of the object (as `columns` maps them), each once, or ' +
          "an export's own columns.",
        wrong,
      );
    return { columns, start: bom + new TextEncoder().encode(text.slice(0, consumed)).byteLength };
  }
}

/** The import `importId` if it is the caller's (anyone else's, or none: 404). */
async function ownImport(request: IRequest, context: Context): Promise<{ state: ImportState; userId: number }> {
  const keyHash = await keyHashOf(request);
  const { importId } = tenantPathIds(request.params, context.tenant.id, 'importId');
  const [{ caller }, state] = await Promise.all([
    context.cached.createContext(keyHash, []),
    new Imports(context.db, context.meter).get(importId),
  ]);
  if (caller === undefined) throw unauthorized();
  if (state === undefined || state.user_id !== caller.userId) throw notFound('Import');
  return { state, userId: caller.userId };
}

/** GET /imports/{importId}: its status and counts. */
export async function getImport(request: IRequest, context: Context): Promise<Response> {
  const { state } = await ownImport(request, context);
  return json(importOut(state));
}

/** DELETE /imports/{importId}: cancels it; the rows applied stay. A finished import answers 409. */
export async function cancelImport(request: IRequest, context: Context): Promise<Response> {
  const { state, userId } = await ownImport(request, context);
  // Cancelling is idempotent: a key is checked for its form and needs nothing kept.
  const key = keyHeader(request);
  if (key.problems.length > 0) throw invalidBody(key.problems);
  const now = await new Imports(context.db, context.meter).cancel(state.id, userId, Date.now());
  if (now === undefined) throw notFound('Import');
  if (now.status !== 'cancelled')
    throw new HttpError(409, { code: 'conflict', detail: `The import has ${now.status}: there is nothing to cancel.` });
  await dropFile(context.env, now.file);
  return json(importOut(now));
}

/** Rows of errors read per D1 call while streaming them. */
const ERRORS_PAGE = 500;

/** GET /imports/{importId}/errors: the skipped rows, one JSON line each, streamed in row order. */
export async function importErrors(request: IRequest, context: Context): Promise<Response> {
  const { state } = await ownImport(request, context);
  const imports = new Imports(context.db, context.meter);
  const encoder = new TextEncoder();
  let after = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const rows = await imports.errors(state.id, after, ERRORS_PAGE);
      for (const row of rows) controller.enqueue(encoder.encode(`{"row":${row.row},"errors":${row.errors}}\n`));
      after = rows.at(-1)?.row ?? after;
      if (rows.length < ERRORS_PAGE) controller.close();
    },
  });
  return new Response(body, { headers: { 'Content-Type': 'application/x-ndjson' } });
}

/**
 * GET /workspaces/{workspaceId}/imports: the caller's imports into the workspace (an
 * administrator's: everyone's), newest first, a keyset page at a time (signed cursors). Members
 * only, else 404.
 */
export async function listImports(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  const sent = queryOf(request.url);
  const query = parsePageQuery(sent.params);
  const { caller } = await context.store.createContext(keyHash, []);
  if (caller === undefined) throw unauthorized();
  const problems = [...sent.problems, ...(query.ok ? [] : query.problems)];
  if (!query.ok || problems.length > 0) throw invalidQuery(problems);
  if (!caller.roles.has(workspaceId)) throw notFound('Workspace');
  const { limit, cursor } = query.value;
  const scope = `imports/${caller.userId}/${workspaceId}`;
  const secret = await cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
  const before = cursor === undefined ? Number.MAX_SAFE_INTEGER : await readCursor(secret, cursor, scope, 'cursor');
  const imports = new Imports(context.db, context.meter);
  const fetched = await imports.list(caller.userId, workspaceId, before, limit + 1);
  const items = fetched.slice(0, limit);
  const last = items.at(-1);
  const nextCursor = fetched.length > limit && last !== undefined ? await signCursor(secret, last.id, scope) : null;
  return json({ items: items.map(importOut), nextCursor });
}
