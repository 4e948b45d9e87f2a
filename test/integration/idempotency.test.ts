import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { KEY_TTL_MS } from '../../src/storage/idempotency.ts';
import { admin, call, countRows, createOne, expectProblem, newUser, world, runScheduled } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const version = async (id: number) =>
  (await env.DB.prepare('SELECT version FROM records WHERE id = ?').bind(id).first<{ version: number }>())?.version;

/** A call that keeps the raw body text, to compare answers byte for byte. */
async function rawCall(
  method: string,
  path: string,
  key: string,
  body: unknown,
  idempotencyKey: string,
  extra: Record<string, string> = {},
) {
  const res = await exports.default.fetch(`http://records.test${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${key}`,
      'Content-Type': 'application/json',
      'Idempotency-Key': idempotencyKey,
      ...extra,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('Idempotency-Key', () => {
  it('a create sent again with its key answers the first answer byte for byte and creates nothing more', async () => {
    const { editor, object } = await world();
    const body = [
      { objectId: object.id, fieldValues: [fv('firstName', 'Ada')] },
      { objectId: object.id, fieldValues: [fv('firstName', 'Alan')] },
    ];
    const first = await rawCall('POST', '/records/batch', editor.key, body, 'create-1');
    expect(first.status).toBe(201);
    expect(first.headers.get('Idempotent-Replayed')).toBeNull();
    const records = await countRows('records');
    // The same JSON, differently spaced and ordered, is the same request.
    const again = await rawCall(
      'POST',
      '/records/batch',
      editor.key,
      ` [ {"fieldValues":[{"value":"Ada","fieldName":"firstName"}], "objectId":${object.id}}, ` +
        `${JSON.stringify(body[1])} ]`,
      'create-1',
    );
    expect(again.status).toBe(201);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await countRows('records')).toBe(records);
  });

  it('a patch sent again answers what it answered then, even after the record changed, with its ETag', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const first = await rawCall('PATCH', path, editor.key, { fieldValues: [fv('age', 1)] }, 'p-1');
    expect(first.status).toBe(200);
    expect((await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 2)] } })).body.version).toBe(
      3,
    );
    const again = await rawCall('PATCH', path, editor.key, { fieldValues: [fv('age', 1)] }, 'p-1');
    expect(again).toMatchObject({ status: 200, text: first.text });
    expect(again.headers.get('ETag')).toBe('"2"');
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await version(record.id)).toBe(3);
  });

  it('a no-op patch with a key stores its answer on its own', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const first = await rawCall('PATCH', path, editor.key, {}, 'noop');
    expect(JSON.parse(first.text).version).toBe(1);
    await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 2)] } });
    const again = await rawCall('PATCH', path, editor.key, {}, 'noop');
    expect(again.text).toBe(first.text);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
  });

  it('a batch sent again answers its first answer and writes nothing', async () => {
    const { editor, object } = await world();
    const ids = [
      (await createOne(editor.key, object.id, [fv('firstName', 'A')])).id,
      (await createOne(editor.key, object.id, [fv('firstName', 'B')])).id,
    ];
    const body = ids.map((id, i) => ({ id, fieldValues: [fv('age', i)] }));
    const first = await rawCall('PATCH', '/records/batch', editor.key, body, 'b-1');
    expect(first.status).toBe(200);
    const again = await rawCall('PATCH', '/records/batch', editor.key, body, 'b-1');
    expect(again).toMatchObject({ status: 200, text: first.text });
    expect(await version(ids[0])).toBe(2);
  });

  it(
    'the same key with another body is 422 idempotency_key_reused; on another path or for another user ' +
      'it is another key',
    async () => {
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
      const path = `/workspaces/${workspaceId}/records/${record.id}`;
      await rawCall('PATCH', path, editor.key, { fieldValues: [fv('age', 1)] }, 'k');
      const reused = await call('PATCH', path, {
        key: editor.key,
        body: { fieldValues: [fv('age', 9)] },
        headers: { 'Idempotency-Key': 'k' },
      });
      expectProblem(reused, 422, 'unprocessable');
      expect(reused.body.errors).toEqual([
        {
          header: 'Idempotency-Key',
          code: 'idempotency_key_reused',
          message: 'the key was used for a different request',
        },
      ]);
      expect(await version(record.id)).toBe(2);
      // Another path: a batch with the same key runs afresh.
      const batch = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [{ id: record.id, fieldValues: [fv('age', 3)] }],
        headers: { 'Idempotency-Key': 'k' },
      });
      expect(batch.status).toBe(200);
      expect(batch.headers.get('Idempotent-Replayed')).toBeNull();
      // Another user: the same key, path and body run afresh.
      const other = await newUser('other');
      await admin('PUT', `/admin/workspaces/${workspaceId}/members/${other.id}`, { role: 'editor' });
      const theirs = await call('PATCH', path, {
        key: other.key,
        body: { fieldValues: [fv('age', 1)] },
        headers: { 'Idempotency-Key': 'k' },
      });
      expect(theirs.status).toBe(200);
      expect(theirs.headers.get('Idempotent-Replayed')).toBeNull();
      expect(theirs.body).toMatchObject({ version: 4, updatedBy: other.id });
    },
  );

  it('a request that failed stores nothing: the same key runs afresh', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const options = {
      key: editor.key,
      body: { fieldValues: [fv('age', 5)] },
      headers: { 'Idempotency-Key': 'retry-me', 'If-Match': '"2"' },
    };
    expectProblem(await call('PATCH', path, options), 412, 'precondition_failed');
    await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 1)] } });
    const second = await call('PATCH', path, options);
    expect(second.status).toBe(200);
    expect(second.body.version).toBe(3);
    expect(second.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await countRows("idempotency_keys WHERE key = 'retry-me' AND state = 'done'")).toBe(1);
  });

  it('a malformed key is 400 naming the header, after 401 and with the body problems', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const bad = await call('PATCH', path, {
      key: editor.key,
      body: { feildValues: [] },
      headers: { 'Idempotency-Key': 'x'.repeat(256) },
    });
    expectProblem(bad, 400, 'invalid_request');
    expect(bad.body.errors).toEqual([
      { pointer: '/feildValues', code: 'unknown_property', message: 'unknown property' },
      { header: 'Idempotency-Key', code: 'invalid_format', message: 'expected 1 to 255 visible ASCII characters' },
    ]);
    expectProblem(
      await call('PATCH', path, { key: 'nope', body: {}, headers: { 'Idempotency-Key': ' ' } }),
      401,
      'unauthorized',
    );
    expect(await countRows(`idempotency_keys WHERE user_id = ${editor.id}`)).toBe(0);
  });

  it('the scheduled handler removes answers older than 24 hours and keeps newer ones', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    await rawCall(
      'PATCH',
      `/workspaces/${workspaceId}/records/${record.id}`,
      editor.key,
      { fieldValues: [fv('age', 1)] },
      'old',
    );
    await rawCall(
      'PATCH',
      `/workspaces/${workspaceId}/records/${record.id}`,
      editor.key,
      { fieldValues: [fv('age', 2)] },
      'new',
    );
    await env.DB.prepare(`UPDATE idempotency_keys SET created_at = created_at - ? WHERE key = 'old'`)
      .bind(KEY_TTL_MS + 1000)
      .run();
    await runScheduled();
    const keys = await env.DB.prepare("SELECT key FROM idempotency_keys WHERE key IN ('old', 'new') ORDER BY key").all<{
      key: string;
    }>();
    expect(keys.results.map((r) => r.key)).toEqual(['new']);
  });
});
