import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { revocationFloor } from '../../src/storage/sessions.ts';
import { d1Log } from '../d1-log.ts';
import { call, countRows, createOne, expectProblem, world, type Answer } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/** The statements one call ran, as d1Log saw them (the call's objects included). */
async function logged(run: () => Promise<Answer>): Promise<{ answer: Answer; ran: typeof d1Log }> {
  d1Log.length = 0;
  const answer = await run();
  return { answer, ran: d1Log.splice(0) };
}

const bookmarkOf = (answer: Answer): string => {
  const bookmark = answer.headers.get('X-D1-Bookmark');
  if (bookmark === null || !BOOKMARK.test(bookmark)) throw new Error(`no bookmark: ${bookmark}`);
  return bookmark;
};

/** Where a read without a bookmark starts: anywhere, unless this isolate revoked something (then no earlier). */
const anywhere = (): string => revocationFloor() ?? 'first-unconstrained';

/** A workspace with one record patched once, and every read path of it. */
async function setUp() {
  const w = await world();
  const record = await createOne(w.editor.key, w.object.id, [fv('firstName', 'Ada'), fv('stage', 'lead')]);
  await call('PATCH', `/workspaces/${w.workspaceId}/records/${record.id}`, {
    key: w.editor.key,
    body: { fieldValues: [fv('lastName', 'Lovelace')] },
  });
  const reads = [
    `/records/${record.id}`,
    `/workspaces/${w.workspaceId}/records/${record.id}`,
    `/workspaces/${w.workspaceId}/records?limit=50`,
    `/workspaces/${w.workspaceId}/records?field.stage=lead&objectId=${w.object.id}`,
    `/workspaces/${w.workspaceId}/changes`,
    '/me',
  ];
  // The cursor key is made (a write) once per isolate and database; after that lists only read.
  await call('GET', reads[2] as string, { key: w.editor.key });
  return { ...w, record, reads };
}

describe('reads near every user: D1 sessions and bookmarks', () => {
  it(
    'every read path reads only through a session that a replica may serve, or that starts at the ' + 'bookmark sent',
    async () => {
      const { editor, stranger, record, reads, workspaceId } = await setUp();
      for (const path of reads) {
        const plain = await logged(() => call('GET', path, { key: editor.key }));
        expect(plain.answer.status, path).toBe(200);
        expect(plain.ran.length, path).toBeGreaterThan(0);
        expect(
          plain.ran.filter((s) => s.via !== anywhere()),
          path,
        ).toEqual([]);
        const since = bookmarkOf(plain.answer);
        const pinned = await logged(() => call('GET', path, { key: editor.key, headers: { 'X-D1-Bookmark': since } }));
        expect(pinned.answer.body, path).toEqual(plain.answer.body);
        expect(
          pinned.ran.filter((s) => s.via !== since),
          path,
        ).toEqual([]);
        expect(bookmarkOf(pinned.answer) >= since, path).toBe(true);
      }
      // A query is a read sent by POST: it reads the same way.
      const query = await logged(() =>
        call('POST', `/workspaces/${workspaceId}/records/query`, {
          key: editor.key,
          body: { filter: { field: 'stage', op: 'eq', value: 'lead' }, count: true },
        }),
      );
      expect(query.answer.status).toBe(200);
      expect(query.answer.body.items.map((r: { id: number }) => r.id)).toEqual([record.id]);
      expect(query.ran.filter((s) => s.via !== anywhere())).toEqual([]);
      // Refusals read the same way: a stranger's 404 and an unknown key's 401.
      const hidden = await logged(() => call('GET', `/records/${record.id}`, { key: stranger.key }));
      expectProblem(hidden.answer, 404, 'not_found');
      expect(hidden.ran.map((s) => s.via)).toEqual([anywhere(), anywhere(), anywhere()]);
      bookmarkOf(hidden.answer);
      const anonymous = await logged(() => call('GET', '/me', { key: 'nobody' }));
      expectProblem(anonymous.answer, 401, 'unauthorized');
      expect(anonymous.ran.every((s) => s.via === anywhere())).toBe(true);
    },
  );

  it(
    'writes, their version guards and idempotency look-ups run on the primary; the answer carries the ' +
      'commit’s bookmark',
    async () => {
      const { editor, workspaceId, record } = await setUp();
      const before = bookmarkOf(await call('GET', `/records/${record.id}`, { key: editor.key }));
      const writes = [
        () =>
          call('POST', '/records/batch', {
            key: editor.key,
            body: [{ objectId: record.objectId, fieldValues: [fv('firstName', 'Grace')] }],
          }),
        () =>
          call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
            key: editor.key,
            body: { fieldValues: [fv('age', 36)] },
            headers: { 'Idempotency-Key': 'replica-1', 'If-Match': '"2"' },
          }),
        () =>
          call('PATCH', '/records/batch', {
            key: editor.key,
            body: [{ id: record.id, fieldValues: [fv('age', 37)] }],
          }),
        () => call('DELETE', `/workspaces/${workspaceId}/records/${record.id}`, { key: editor.key }),
      ];
      let newest = before;
      for (const write of writes) {
        const { answer, ran } = await logged(write);
        expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
        // Nothing of a write goes to a replica: checks read where the write will land.
        expect(ran.filter((s) => s.via !== 'first-primary')).toEqual([]);
        expect(ran.some((s) => /INSERT INTO writes/i.test(s.sql))).toBe(true);
        const committed = bookmarkOf(answer);
        expect(committed > newest).toBe(true);
        newest = committed;
        // Read with the write's bookmark: the read starts there and sees what was written.
        const read = await logged(() =>
          call('GET', `/records/${record.id}`, { key: editor.key, headers: { 'X-D1-Bookmark': committed } }),
        );
        expect(read.ran.every((s) => s.via === committed)).toBe(true);
        expect(bookmarkOf(read.answer) >= committed).toBe(true);
      }
      const final = await call('GET', `/records/${record.id}`, {
        key: editor.key,
        headers: { 'X-D1-Bookmark': newest },
      });
      expect(final.body).toMatchObject({
        version: 5,
        deleted: true,
        fieldValues: expect.arrayContaining([fv('age', 37)]),
      });
    },
  );

  it('a malformed X-D1-Bookmark is 400 naming the header, before anything is read or written', async () => {
    const { editor, workspaceId, record } = await setUp();
    const ledger = await countRows('writes');
    for (const bad of [
      'garbage',
      '00000000-00000001-00000000',
      `${'0'.repeat(8)}-${'0'.repeat(8)}-${'0'.repeat(8)}-${'G'.repeat(32)}`,
      ' ',
    ]) {
      for (const [method, path, body] of [
        ['GET', `/records/${record.id}`, undefined],
        ['GET', `/workspaces/${workspaceId}/records`, undefined],
        ['PATCH', `/workspaces/${workspaceId}/records/${record.id}`, { fieldValues: [fv('age', 99)] }],
      ] as const) {
        const { answer, ran } = await logged(() =>
          call(method, path, { key: editor.key, headers: { 'X-D1-Bookmark': bad }, ...(body ? { body } : {}) }),
        );
        expectProblem(answer, 400, 'invalid_request');
        expect(answer.body.errors).toEqual([
          { header: 'X-D1-Bookmark', code: 'invalid_format', message: expect.stringContaining('bookmark') },
        ]);
        expect(ran).toEqual([]);
        // Nothing read: no bookmark, or this isolate's floor (where its reads would have started).
        expect(answer.headers.get('X-D1-Bookmark')).toBe(method === 'GET' ? (revocationFloor() ?? null) : null);
      }
    }
    expect(await countRows('writes')).toBe(ledger);
    const stored = await env.DB.prepare('SELECT version, field_values FROM records WHERE id = ?')
      .bind(record.id)
      .first();
    expect(stored).toMatchObject({ version: 2 });
    expect(String(stored?.field_values)).not.toContain('99');
  });

  it('every answer carries a bookmark: admin calls, refusals, and the one sent when nothing was read', async () => {
    const { editor } = await setUp();
    const users = await call('GET', '/admin/users', { key: 'test-admin-token' });
    expect(users.status).toBe(200);
    bookmarkOf(users);
    const sent = bookmarkOf(await call('GET', '/me', { key: editor.key }));
    const unknown = await call('GET', '/nowhere', { headers: { 'X-D1-Bookmark': sent } });
    expectProblem(unknown, 404, 'not_found');
    expect(unknown.headers.get('X-D1-Bookmark')).toBe(sent);
  });

  it(
    'a revocation holds at once in the isolate that made it: its reads start no earlier, whatever a ' + 'replica lags',
    async () => {
      const { editor, viewer, workspaceId } = await setUp();
      expect((await call('GET', '/me', { key: viewer.key })).status).toBe(200);
      const keys = await call('GET', `/admin/users/${viewer.id}/keys`, { key: 'test-admin-token' });
      const revoked = await call('DELETE', `/admin/keys/${keys.body[0].id}`, { key: 'test-admin-token' });
      expect(revoked.status).toBe(204);
      const at = bookmarkOf(revoked);
      expect(revocationFloor()! >= at).toBe(true);
      const after = await logged(() => call('GET', '/me', { key: viewer.key }));
      expectProblem(after.answer, 401, 'unauthorized');
      expect(after.ran.length).toBeGreaterThan(0);
      expect(after.ran.every((s) => s.via >= at && BOOKMARK.test(s.via))).toBe(true);
      // A membership removed: the same.
      const removed = await call('DELETE', `/admin/workspaces/${workspaceId}/members/${editor.id}`, {
        key: 'test-admin-token',
      });
      expect(removed.status).toBe(204);
      const list = await logged(() => call('GET', `/workspaces/${workspaceId}/records`, { key: editor.key }));
      expectProblem(list.answer, 404, 'not_found');
      expect(list.ran.every((s) => s.via >= bookmarkOf(removed) && BOOKMARK.test(s.via))).toBe(true);
    },
  );
});
