import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call, CONTACT_FIELDS, createOne, expectProblem, letMemoryExpire, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

/**
 * What an isolate remembers (keys, memberships, definitions, record facts) may only say yes:
 * a grant or a new field works at once, a removal takes effect within CACHE_TTL_MS.
 */
describe('isolate memory', () => {
  it('a removed membership stops writes within the bound, and reads at once', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    expect((await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 1)] } })).status).toBe(200);
    expect((await admin('DELETE', `/admin/workspaces/${workspaceId}/members/${editor.id}`)).status).toBe(204);
    expectProblem(await call('GET', `/records/${record.id}`, { key: editor.key }), 404, 'not_found');

    letMemoryExpire();
    expectProblem(
      await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 2)] } }),
      404,
      'not_found',
    );
    expectProblem(
      await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('firstName', 'B')] }],
      }),
      422,
      'unprocessable',
    );
    const stored = await env.DB.prepare('SELECT version FROM records WHERE id = ?')
      .bind(record.id)
      .first<{ version: number }>();
    expect(stored?.version).toBe(2);
  });

  it('a revoked key stops working within the bound', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    await env.DB.prepare('DELETE FROM api_keys WHERE user_id = ?').bind(editor.id).run();
    letMemoryExpire();
    expectProblem(
      await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, { key: editor.key, body: {} }),
      401,
      'unauthorized',
    );
    expectProblem(
      await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('firstName', 'B')] }],
      }),
      401,
      'unauthorized',
    );
  });

  it('a new membership and a new field work at once: a refusal is never made on memory alone', async () => {
    const { editor, viewer, stranger, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    const body = { fieldValues: [fv('lastName', 'L')] };
    const asStranger = () =>
      call('POST', '/records/batch', {
        key: stranger.key,
        body: [{ objectId: object.id, fieldValues: [fv('firstName', 'C')] }],
      });
    expectProblem(await asStranger(), 422, 'unprocessable');
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${stranger.id}`, { role: 'editor' });
    expect((await asStranger()).status).toBe(201);

    expectProblem(
      await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, { key: viewer.key, body }),
      403,
      'forbidden',
    );
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${viewer.id}`, { role: 'editor' });
    expect(
      (await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, { key: viewer.key, body })).body.version,
    ).toBe(2);

    await admin('PUT', `/admin/objects/${object.id}`, {
      name: 'Contact',
      workspaceIds: [workspaceId],
      fields: [...CONTACT_FIELDS, { name: 'nick', type: 'text' }],
    });
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('nick', 'A')] },
    });
    expect(patched.body.fieldValues).toContainEqual(fv('nick', 'A'));
    const created = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('firstName', 'B'), fv('nick', 'B')] }],
    });
    expect(created.body[0].record).toMatchObject({
      objectVersion: 2,
      fieldValues: [fv('firstName', 'B'), fv('nick', 'B')],
    });
  });

  it(
    'a new object version is used for new records within the bound, and a removed field is refused ' + 'after it',
    async () => {
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
      await admin('PUT', `/admin/objects/${object.id}`, {
        name: 'Person',
        workspaceIds: [workspaceId],
        fields: CONTACT_FIELDS.filter((f) => f.name !== 'age'),
      });
      letMemoryExpire();
      const created = await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('firstName', 'B')] }],
      });
      expect(created.body[0].record).toMatchObject({ objectVersion: 2, name: `Person #${created.body[0].record.id}` });
      const refused = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 3)] },
      });
      expectProblem(refused, 422, 'unprocessable');
      expect(refused.body.errors).toEqual([
        { pointer: '/fieldValues/0/fieldName', code: 'unknown_field', message: 'not a field of the object' },
      ]);
    },
  );
});
