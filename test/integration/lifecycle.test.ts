import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, createOne, expectProblem, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const stored = async (id: number) =>
  env.DB.prepare('SELECT version, deleted FROM records WHERE id = ?')
    .bind(id)
    .first<{ version: number; deleted: number }>();
/** The change rows of the whole database, in commit order. */
const changes = async () =>
  (
    await env.DB.prepare('SELECT seq, record_id, version, type, by, data FROM changes ORDER BY seq').all<{
      seq: number;
      record_id: number;
      version: number;
      type: string;
      by: number;
      data: string;
    }>()
  ).results;

describe('delete and restore', () => {
  it(
    'delete is soft: version + 1, deleted, ETag; reads show it; a second delete changes nothing; ' +
      'restore brings it back',
    async () => {
      const { editor, viewer, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
      const path = `/workspaces/${workspaceId}/records/${record.id}`;
      const deleted = await call('DELETE', path, { key: editor.key });
      expect(deleted.status).toBe(200);
      expect(deleted.headers.get('ETag')).toBe('"2"');
      expect(deleted.body).toMatchObject({
        id: record.id,
        version: 2,
        deleted: true,
        updatedBy: editor.id,
        fieldValues: record.fieldValues,
      });
      expect((await call('GET', `/records/${record.id}`, { key: viewer.key })).body).toEqual(deleted.body);
      const again = await call('DELETE', path, { key: editor.key });
      expect(again.body).toEqual(deleted.body);
      const restored = await call('POST', `${path}/restore`, { key: editor.key });
      expect(restored.status).toBe(200);
      expect(restored.body).toMatchObject({ version: 3, deleted: false });
      expect((await call('POST', `${path}/restore`, { key: editor.key, body: {} })).body).toEqual(restored.body);
      expect(await stored(record.id)).toEqual({ version: 3, deleted: 0 });
    },
  );

  it(
    'honours If-Match; viewers get 403, strangers and other workspaces 404; bodies other than {} are ' + '400',
    async () => {
      const { editor, viewer, stranger, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
      const path = `/workspaces/${workspaceId}/records/${record.id}`;
      expectProblem(
        await call('DELETE', path, { key: editor.key, headers: { 'If-Match': '"7"' } }),
        412,
        'precondition_failed',
      );
      expectProblem(await call('DELETE', path, { key: viewer.key }), 403, 'forbidden');
      expectProblem(await call('DELETE', path, { key: stranger.key }), 404, 'not_found');
      expectProblem(
        await call('DELETE', `/workspaces/${workspaceId + 1000}/records/${record.id}`, { key: editor.key }),
        404,
        'not_found',
      );
      expectProblem(
        await call('POST', `${path}/restore`, { key: editor.key, body: { deleted: false } }),
        400,
        'invalid_request',
      );
      expectProblem(await call('DELETE', path, { key: 'nope' }), 401, 'unauthorized');
      expect(await stored(record.id)).toEqual({ version: 1, deleted: 0 });
      expect((await call('DELETE', path, { key: editor.key, headers: { 'If-Match': '"1"' } })).body.version).toBe(2);
    },
  );

  it(
    'a deleted record cannot be patched (409 record_deleted), alone or in a batch, and nothing of the ' +
      'batch is written',
    async () => {
      const { editor, workspaceId, object } = await world();
      const [a, b] = [
        await createOne(editor.key, object.id, [fv('firstName', 'A')]),
        await createOne(editor.key, object.id, [fv('firstName', 'B')]),
      ];
      await call('DELETE', `/workspaces/${workspaceId}/records/${b.id}`, { key: editor.key });
      expectProblem(
        await call('PATCH', `/workspaces/${workspaceId}/records/${b.id}`, {
          key: editor.key,
          body: { fieldValues: [fv('age', 1)] },
        }),
        409,
        'record_deleted',
      );
      const batch = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [
          { id: a.id, fieldValues: [fv('age', 1)] },
          { id: b.id, fieldValues: [fv('age', 1)] },
        ],
      });
      expectProblem(batch, 409, 'record_deleted');
      expect(batch.body.errors).toEqual([
        { pointer: '/1/id', code: 'record_deleted', message: 'a deleted record cannot be patched' },
      ]);
      expect(await stored(a.id)).toEqual({ version: 1, deleted: 0 });
    },
  );

  it('concurrent patches and a delete of one record answer distinct consecutive versions', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const answers = await Promise.all([
      ...Array.from({ length: 30 }, (_, i) =>
        call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', i)] } }),
      ),
      call('DELETE', path, { key: editor.key }),
    ]);
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 409);
    expect(ok.length + refused.length).toBe(31);
    // Patches after the delete are refused; everything written has its own version.
    const versions = ok.map((a) => a.body.version).sort((x, y) => x - y);
    expect(versions).toEqual(Array.from({ length: ok.length }, (_, i) => i + 2));
    expect(await stored(record.id)).toEqual({ version: ok.length + 1, deleted: 1 });
  });
});

describe('the outbox: one change row per committed change, in the same transaction', () => {
  it(
    'a scripted mix leaves exactly its committed changes, in commit order, each equal to what its write' + ' answered',
    async () => {
      const { editor, workspaceId, object } = await world();
      const expected: { type: string; record: unknown }[] = [];
      const created = await call('POST', '/records/batch', {
        key: editor.key,
        body: [
          { objectId: object.id, fieldValues: [fv('firstName', 'A')] },
          { objectId: object.id, fieldValues: [fv('firstName', 'B')] },
        ],
      });
      for (const item of created.body) expected.push({ type: 'created', record: item.record });
      const [a, b] = created.body.map((item: any) => item.record.id) as [number, number];
      const path = (id: number) => `/workspaces/${workspaceId}/records/${id}`;
      const single = await call('PATCH', path(a), { key: editor.key, body: { fieldValues: [fv('age', 1)] } });
      expected.push({ type: 'updated', record: single.body });
      const noop = await call('PATCH', path(a), { key: editor.key, body: { fieldValues: [fv('age', 1)] } });
      expect(noop.body.version).toBe(2);
      const batch = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [{ id: a, fieldValues: [fv('lastName', 'X')] }, { id: b }],
      });
      expected.push({ type: 'updated', record: batch.body[0].record }); // b changed nothing
      const failed = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [
          { id: b, fieldValues: [fv('age', 2)] },
          { id: a, fieldValues: [fv('age', 'x')] },
        ],
      });
      expect(failed.status).toBe(422);
      const deleted = await call('DELETE', path(b), { key: editor.key });
      expected.push({ type: 'deleted', record: deleted.body });
      const restored = await call('POST', `${path(b)}/restore`, { key: editor.key });
      expected.push({ type: 'restored', record: restored.body });
      const rows = await changes();
      const mine = rows.filter((row) => row.record_id === a || row.record_id === b);
      expect(mine.map((row) => row.type)).toEqual(expected.map((e) => e.type));
      // A created row holds the answer's JSON byte for byte; an update only what changed, and
      // what it changed from; each row names its version and author.
      expect(mine[0]?.data).toBe(JSON.stringify(created.body[0].record));
      expect(JSON.parse(mine[2]?.data ?? '')).toEqual({
        set: [fv('age', 1)],
        was: [fv('age', null)],
        prevAt: created.body[0].record.updatedAt,
        prevBy: editor.id,
      });
      expect(mine.map((row) => [row.version, row.by])).toEqual(expected.map((e: any) => [e.record.version, editor.id]));
    },
  );
});
