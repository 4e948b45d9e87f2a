import { createScheduledController } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import testBuild from './worker.ts';
import { CACHE_TTL_MS, isolateCache } from '../../src/storage/isolate-cache.ts';
import { Lists } from '../../src/storage/lists.ts';
import { NO_TENANT } from '../../src/tenancy/tenant-scope.ts';
import { Meter } from '../../src/storage/meter.ts';
import { recordKeys } from '../../src/domain/record-keys.ts';

export const ADMIN_TOKEN = 'test-admin-token';

export interface Answer<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface CallOptions {
  body?: unknown;
  /** Raw body text, sent as is. */
  raw?: string;
  key?: string;
  headers?: Record<string, string>;
}

let clockOffset = 0;

/** Moves the isolate cache's clock on by CACHE_TTL_MS: everything remembered until now expires. */
export function letMemoryExpire(): void {
  clockOffset += CACHE_TTL_MS;
  isolateCache.now = () => Date.now() + clockOffset;
}

/** One HTTP call into the Worker, as a client would make it. */
export async function call<T = any>(method: string, path: string, options: CallOptions = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.Authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['Content-Type'] ??= 'application/json';
  const res = await exports.default.fetch(`http://records.test${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

export const admin = <T = any>(method: string, path: string, body?: unknown): Promise<Answer<T>> =>
  call<T>(method, path, { key: ADMIN_TOKEN, ...(body === undefined ? {} : { body }) });

async function expectCreated<T>(answer: Answer<T>): Promise<T> {
  if (answer.status !== 201 && answer.status !== 200)
    throw new Error(`setup failed: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

export async function newUser(name = 'user'): Promise<{ id: number; key: string }> {
  const { id } = await expectCreated(await admin<{ id: number }>('POST', '/admin/users', { name }));
  const { key } = await expectCreated(await admin<{ key: string }>('POST', `/admin/users/${id}/keys`));
  return { id, key };
}

export async function newWorkspace(members: Record<number, 'editor' | 'viewer'> = {}): Promise<number> {
  const { id } = await expectCreated(await admin<{ id: number }>('POST', '/admin/workspaces', { name: 'ws' }));
  for (const [userId, role] of Object.entries(members)) {
    await expectCreated(await admin('PUT', `/admin/workspaces/${id}/members/${userId}`, { role }));
  }
  return id;
}

export const CONTACT_FIELDS = [
  { name: 'firstName', type: 'text', required: true },
  { name: 'lastName', type: 'text' },
  { name: 'age', type: 'integer' },
  { name: 'stage', type: 'select', options: ['lead', 'customer'] },
  { name: 'tags', type: 'multiSelect', options: ['a', 'b', 'c'] },
  { name: 'email', type: 'email' },
];

export async function newObject(workspaceIds: number[], extra: Record<string, unknown> = {}): Promise<any> {
  return expectCreated(
    await admin('POST', '/admin/objects', {
      name: 'Contact',
      workspaceIds,
      nameTemplate: '{firstName} {lastName}',
      fields: CONTACT_FIELDS,
      ...extra,
    }),
  );
}

/** One field's value, as bodies and records carry it. */
export const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

/**
 * An object defined as `definition` in a fresh workspace that `editor` edits and `viewer` views
 * (`stranger` belongs to none): the setup the search, query and case-fold tests share.
 */
export async function objectIn(definition: { name: string; fields: unknown[]; nameTemplate?: string }) {
  const editor = await newUser('editor');
  const viewer = await newUser('viewer');
  const stranger = await newUser('stranger');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor', [viewer.id]: 'viewer' });
  const full = { ...definition, workspaceIds: [workspaceId] };
  const object = await expectCreated(await admin<any>('POST', '/admin/objects', full));
  return { editor, viewer, stranger, workspaceId, object, definition: full };
}

/** A user who edits a workspace holding a Contact object: the usual starting point. */
export async function world() {
  const editor = await newUser('editor');
  const viewer = await newUser('viewer');
  const stranger = await newUser('stranger');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor', [viewer.id]: 'viewer' });
  const object = await newObject([workspaceId]);
  return { editor, viewer, stranger, workspaceId, object };
}

export async function createOne(
  key: string,
  objectId: number,
  fieldValues: unknown[],
  extra: Record<string, unknown> = {},
): Promise<any> {
  const answer = await call('POST', '/records/batch', { key, body: [{ objectId, fieldValues, ...extra }] });
  if (answer.status !== 201) throw new Error(`create failed: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body[0].record;
}

export async function countRows(table: string): Promise<number> {
  const row = await env.DB.prepare(`SELECT count(*) AS n FROM ${table}`).first<{ n: number }>();
  return row?.n ?? 0;
}

export function expectProblem(answer: Answer, status: number, code: string): void {
  if (answer.status !== status || answer.body?.code !== code || answer.body?.status !== status) {
    throw new Error(`expected ${status} ${code}, got ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  if (answer.headers.get('Content-Type') !== 'application/problem+json') throw new Error('not problem+json');
}

/**
 * Adds `n` records of `objectId` shared with `workspaceId` in one statement (the triggers index
 * them as any write does): `values` is an SQL expression of `i` giving the field values' JSON,
 * `name` one giving the name, `by` the user who writes them (whom references are checked for).
 * Then their keys are computed, as the scheduled run does.
 */
export async function bulkRecords(
  objectId: number,
  workspaceId: number,
  n: number,
  values: string,
  name = `'Bulk ' || i`,
  by = 1,
): Promise<void> {
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO records (id, object_id, object_version, name, field_values, creation_type, version, deleted,
         owned_by, created_at, created_by, updated_at, updated_by, is_template)
       WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?3)
       SELECT (SELECT coalesce(max(id), 0) FROM records) + i, ?1, 1, ${name}, ${values},
         'User', 1, 0, NULL, i, ?4, i, ?4, 0 FROM s`,
    ).bind(objectId, workspaceId, n, by),
    env.DB.prepare(
      `INSERT INTO record_workspaces (record_id, workspace_id)
       SELECT id, ?2 FROM records r
       WHERE r.object_id = ?1 AND NOT EXISTS (SELECT 1 FROM record_workspaces w WHERE w.record_id = r.id)`,
    ).bind(objectId, workspaceId),
  ]);
  await fillKeys();
}

/** Gives every record written by SQL here its keys, as the scheduled run does for records written before them. */
export async function fillKeys(): Promise<void> {
  const lists = new Lists(env.DB, new Meter(), NO_TENANT);
  while ((await lists.fillKeys(recordKeys)) > 0);
}

export const queryRecords = (key: string, workspaceId: number, body: unknown): Promise<Answer> =>
  call('POST', `/workspaces/${workspaceId}/records/query`, { key, body });

/** D1 round trips of the request, from Server-Timing. */
export function roundTrips(answer: Answer): number {
  const match = /d1;dur=[\d.]+;desc="(\d+) round trips?"/.exec(answer.headers.get('Server-Timing') ?? '');
  if (match === null) throw new Error(`no round trips in ${answer.headers.get('Server-Timing')}`);
  return Number(match[1]);
}

/** A record's values by field name. */
export const valuesOf = (record: { fieldValues: { fieldName: string; value: unknown }[] }): Record<string, unknown> =>
  Object.fromEntries(record.fieldValues.map(({ fieldName, value }) => [fieldName, value]));

/** D1's rows read for the request, from Server-Timing. */
export function rowsRead(answer: Answer): number {
  const match = /rows;desc="(\d+) written, (\d+) read"/.exec(answer.headers.get('Server-Timing') ?? '');
  if (match === null) throw new Error('no rows in Server-Timing');
  return Number(match[2]);
}

/** Every page of a query, following nextCursor; `between` runs after each page (numbered from 1). */
export async function walkQuery(
  key: string,
  workspaceId: number,
  body: Record<string, unknown>,
  between?: (page: number) => Promise<void>,
): Promise<{ ids: number[]; pages: number; rowsRead: number[] }> {
  const ids: number[] = [];
  const read: number[] = [];
  let cursor: string | null | undefined;
  let pages = 0;
  do {
    const answer = await queryRecords(key, workspaceId, { ...body, ...(cursor ? { cursor } : {}) });
    if (answer.status !== 200) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`);
    ids.push(...answer.body.items.map((r: { id: number }) => r.id));
    read.push(rowsRead(answer));
    cursor = answer.body.nextCursor;
    pages += 1;
    if (between) await between(pages);
  } while (cursor !== null);
  return { ids, pages, rowsRead: read };
}

/** Every page of `GET /records/{id}/referenced-by` for `key`, following nextCursor: the items, each page's rows. */
export async function walkReferencedBy(
  key: string,
  id: number,
  limit: number,
): Promise<{ items: { recordId: number; objectId: number; field: string; name: string }[]; rowsRead: number[] }> {
  const items = [];
  const read: number[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`;
    const answer: Answer = await call('GET', `/records/${id}/referenced-by?${query}`, { key });
    if (answer.status !== 200) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`);
    items.push(...answer.body.items);
    read.push(rowsRead(answer));
    cursor = answer.body.nextCursor;
  } while (cursor !== null);
  return { items, rowsRead: read };
}

/**
 * The Cron Trigger's run, as the test build runs it (on the D1 with production's limits), to its
 * end; `vars` replace the build's vars for this run.
 */
export async function runScheduled(vars: Record<string, string> = {}): Promise<void> {
  const pending: Promise<unknown>[] = [];
  testBuild.scheduled(createScheduledController({ scheduledTime: Date.now() }), { ...env, ...vars }, {
    waitUntil: (p: Promise<unknown>) => pending.push(p),
    passThroughOnException() {},
    props: {},
  } as unknown as ExecutionContext);
  await Promise.all(pending);
}

/**
 * The test build's index builder of an object definition (test/integration/worker.ts): held, its
 * alarms do nothing and a test runs its steps one at a time.
 */
export interface IndexBuilder {
  hold(): Promise<void>;
  /** No longer held, but with no alarm set: as if its start had been lost. */
  unhold(): Promise<void>;
  stepOnce(objectId: number): Promise<boolean>;
  release(objectId: number): Promise<void>;
  restart(): Promise<void>;
}
export const indexBuilder = (objectId: number): IndexBuilder =>
  env.INDEX_BUILDS.getByName(String(objectId)) as unknown as IndexBuilder;

/** Waits until no index build of the object is due (its builder runs on alarms). */
export async function untilIndexBuilt(objectId: number, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const due = await env.DB.prepare('SELECT count(*) AS n FROM index_builds WHERE object_id = ?')
      .bind(objectId)
      .first<{ n: number }>();
    if (due?.n === 0) return;
    if (Date.now() > until) throw new Error(`index build of object ${objectId} not done in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Posts an import file as its importer would. */
export function upload(
  key: string,
  workspaceId: number,
  query: string,
  body: string,
  type = 'application/x-ndjson',
  headers: Record<string, string> = {},
): Promise<Answer> {
  return call('POST', `/workspaces/${workspaceId}/imports?${query}`, {
    key,
    raw: body,
    headers: { 'Content-Type': type, ...headers },
  });
}

/** Polls the import until it is no longer queued or running; its state then. */
export async function finished(key: string, id: number, timeoutMs = 30_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const answer = await call('GET', `/imports/${id}`, { key });
    if (answer.status !== 200) throw new Error(`GET /imports/${id} answered ${answer.status}`);
    if (answer.body.status !== 'queued' && answer.body.status !== 'running') return answer.body;
    if (Date.now() > until) throw new Error(`import ${id} still ${answer.body.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A file the Worker streams (an export, an import's errors), as a client downloads it. */
export async function download(key: string, path: string): Promise<Response> {
  return exports.default.fetch(`http://records.test${path}`, { headers: { Authorization: `Bearer ${key}` } });
}

/** The rows an import skipped, as `GET /imports/{id}/errors` lists them. */
export async function errorLines(key: string, id: number): Promise<any[]> {
  const res = await download(key, `/imports/${id}/errors`);
  if (res.status !== 200 || res.headers.get('Content-Type') !== 'application/x-ndjson')
    throw new Error(`GET /imports/${id}/errors answered ${res.status}`);
  const text = new TextDecoder().decode(await res.arrayBuffer());
  return text === ''
    ? []
    : text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line));
}

/** The object of import `id` in the test build: held, it takes no alarm; a test steps its chunks itself. */
export const importObject = (id: number): any => env.IMPORTS.getByName(String(id));

/** The id the next import gets, its object held before the import exists, so that the test steps every chunk. */
export async function holdNextImport(): Promise<number> {
  const next = await env.DB.prepare('SELECT coalesce(max(id), 0) + 1 AS id FROM imports').first<{ id: number }>();
  await importObject(next?.id ?? 1).hold();
  return next?.id ?? 1;
}

/** Files of records: uploaded and downloaded as a client would. */
/** Bytes 0..255 repeated: every byte value, so an altered byte shows. */
export const bytesOf = (size: number): Uint8Array => Uint8Array.from({ length: size }, (_, i) => (i * 7 + 3) % 256);

export async function uploadFile(
  key: string,
  workspaceId: number,
  name: string,
  bytes: Uint8Array,
  type = 'application/octet-stream',
): Promise<Answer> {
  const res = await exports.default.fetch(
    `http://records.test/workspaces/${workspaceId}/files?name=${encodeURIComponent(name)}`,
    {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': type, 'Content-Length': String(bytes.length) },
      body: bytes,
    },
  );
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

export function getFile(key: string, id: number, headers: Record<string, string> = {}): Promise<Response> {
  return exports.default.fetch(`http://records.test/files/${id}`, {
    headers: { Authorization: `Bearer ${key}`, ...headers },
  });
}

/** A file as a record holds it. */
export const heldFile = (file: { id: number; name: string; size: number; contentType: string }) => ({
  id: file.id,
  name: file.name,
  size: file.size,
  contentType: file.contentType,
});

export { byName, foldFeed } from '../feed-fold.ts';

/** An event stream read as it arrives: its events so far, and how it ended (if it did). */
export interface EventStream {
  events: { id?: string; event?: string; data: string }[];
  ended: Promise<void>;
  cancel(): Promise<void>;
}

/** Opens a workspace's live stream as Server-Sent Events (`query`: the query string, with its `?`). */
export async function liveEvents(key: string | undefined, workspaceId: number, query = ''): Promise<EventStream> {
  const res = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live${query}`, {
    headers: { Accept: 'text/event-stream', ...(key === undefined ? {} : { Authorization: `Bearer ${key}` }) },
  });
  if (res.status !== 200 || res.body === null) throw new Error(`live: ${res.status} ${await res.text()}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const events: EventStream['events'] = [];
  const ended = (async () => {
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += value;
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const lines = text.slice(0, end).split('\n');
        text = text.slice(end + 2);
        const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
        const id = field('id');
        const event = field('event');
        const data = field('data');
        // A block without data (a comment line, the stream's heartbeat) is no event.
        if (data === undefined) continue;
        events.push({
          data,
          ...(id === undefined ? {} : { id }),
          ...(event === undefined ? {} : { event }),
        });
      }
    }
  })();
  return { events, ended, cancel: () => reader.cancel() };
}

/** Waits until `done` holds (polling every 20 ms), or fails naming `what` after `ms`. */
export async function until(done: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
