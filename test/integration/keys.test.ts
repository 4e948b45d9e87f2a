import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index.ts';
import { admin, call, createOne, expectProblem, letMemoryExpire, newObject, newUser, newWorkspace } from './helpers.ts';

describe('API keys: ids, prefixes, list, revoke', () => {
  it('issues a key with its id, prefix and time; lists ids and prefixes, never the key', async () => {
    const user = await newUser('Ada');
    const issued = await admin('POST', `/admin/users/${user.id}/keys`);
    expect(issued.status).toBe(201);
    expect(issued.body).toEqual({
      id: expect.any(Number),
      key: expect.stringMatching(/^rk_[A-Za-z0-9_-]{43}$/),
      prefix: issued.body.key.slice(0, 10),
      createdAt: expect.any(Number),
    });
    const listed = await admin('GET', `/admin/users/${user.id}/keys`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([
      { id: expect.any(Number), prefix: user.key.slice(0, 10), createdAt: expect.any(Number) },
      { id: issued.body.id, prefix: issued.body.prefix, createdAt: issued.body.createdAt },
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(issued.body.key);
    const stored = await env.DB.prepare('SELECT prefix, user_id FROM api_keys WHERE id = ?')
      .bind(issued.body.id)
      .first();
    expect(stored).toEqual({ prefix: issued.body.prefix, user_id: user.id });
    expectProblem(await admin('GET', '/admin/users/424242/keys'), 404, 'not_found');
    expect((await admin('GET', `/admin/users/${(await newUser()).id}/keys`)).body).toHaveLength(1);
  });

  it('revokes a key: 401 at once in this isolate, even for a write memory would have allowed', async () => {
    const user = await newUser();
    const ws = await newWorkspace({ [user.id]: 'editor' });
    const object = await newObject([ws]);
    // The key is in use, so this isolate remembers its caller.
    await createOne(user.key, object.id, [{ fieldName: 'firstName', value: 'Ada' }]);
    const [{ id }] = (await admin('GET', `/admin/users/${user.id}/keys`)).body;
    const revoked = await admin('DELETE', `/admin/keys/${id}`);
    expect(revoked.status).toBe(204);
    expect(revoked.body).toBeUndefined();
    const records = async () => (await env.DB.prepare('SELECT count(*) AS n FROM records').first<{ n: number }>())?.n;
    const before = await records();
    const refused = await call('POST', '/records/batch', {
      key: user.key,
      body: [{ objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'B' }] }],
    });
    expectProblem(refused, 401, 'unauthorized');
    expect(refused.headers.get('WWW-Authenticate')).toBe('Bearer');
    expect(await records()).toBe(before);
    expect((await admin('GET', `/admin/users/${user.id}/keys`)).body).toEqual([]);
    expectProblem(await admin('DELETE', `/admin/keys/${id}`), 404, 'not_found');
    expectProblem(await admin('DELETE', '/admin/keys/abc'), 400, 'invalid_request');
  });

  it('a key revoked by another isolate stops working once memory expires (within 30 s)', async () => {
    const user = await newUser();
    const ws = await newWorkspace({ [user.id]: 'editor' });
    const object = await newObject([ws]);
    await createOne(user.key, object.id, [{ fieldName: 'firstName', value: 'Ada' }]);
    // Another isolate revoked it: the row is gone, but this isolate's memory still says yes.
    await env.DB.prepare('DELETE FROM api_keys WHERE user_id = ?').bind(user.id).run();
    await createOne(user.key, object.id, [{ fieldName: 'firstName', value: 'Still remembered' }]);
    letMemoryExpire();
    expectProblem(
      await call('POST', '/records/batch', {
        key: user.key,
        body: [{ objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'C' }] }],
      }),
      401,
      'unauthorized',
    );
    expectProblem(await call('GET', '/records/1', { key: user.key }), 401, 'unauthorized');
  });

  it('keeps keys issued before keys had ids working, listed with the prefix rk_', async () => {
    await env.DB.exec('DROP TABLE api_keys; DROP TABLE d1_migrations');
    await env.DB.exec(
      'CREATE TABLE api_keys (key_hash TEXT PRIMARY KEY CHECK (length(key_hash) = 64), user_id INTEGER NOT NULL ' +
        'REFERENCES users (id), created_at INTEGER NOT NULL CHECK (created_at >= 0)) STRICT, WITHOUT ROWID',
    );
    const user = await env.DB.prepare("INSERT INTO users (name, created_at) VALUES ('old', 1) RETURNING id").first<{
      id: number;
    }>();
    const hash = 'a'.repeat(64);
    await env.DB.prepare('INSERT INTO api_keys VALUES (?, ?, 5)').bind(hash, user?.id).run();
    const migration = env.TEST_MIGRATIONS.find((m) => m.name === '0004_keys.sql');
    if (migration === undefined) throw new Error('no migration 0004');
    await applyD1Migrations(env.DB, [migration]);
    const rows = await env.DB.prepare('SELECT id, key_hash, prefix, user_id, created_at FROM api_keys').all();
    expect(rows.results).toEqual([{ id: 1, key_hash: hash, prefix: 'rk_', user_id: user?.id, created_at: 5 }]);
    expect((await admin('GET', `/admin/users/${user?.id}/keys`)).body).toEqual([
      { id: 1, prefix: 'rk_', createdAt: 5 },
    ]);
  });
});

describe('admin token and object versions', () => {
  it('without ADMIN_TOKEN, answers 503 naming the secret, without Retry-After', async () => {
    const { ADMIN_TOKEN: _configured, ...withoutAdminToken } = env;
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
    const res = await worker.fetch(
      new Request('http://x/admin/users/1/keys', { headers: { Authorization: 'Bearer anything' } }),
      withoutAdminToken,
      ctx,
    );
    expect(res.status).toBe(503);
    expect(res.headers.get('Retry-After')).toBeNull();
    expect(await res.json()).toEqual({
      type: 'about:blank',
      title: 'Admin API disabled',
      status: 503,
      code: 'unavailable',
      detail: 'The ADMIN_TOKEN secret is not set; set it to enable the admin API.',
    });
  });

  it('says a wrong admin token is not the admin token', async () => {
    const wrong = await call('GET', '/admin/objects/1', { key: 'rk_not-the-admin-token' });
    expectProblem(wrong, 401, 'unauthorized');
    expect(wrong.body.detail).toContain('ADMIN_TOKEN');
    expect(wrong.body.detail).not.toMatch(/api key/i);
    expect(wrong.headers.get('WWW-Authenticate')).toBe('Bearer');
  });

  it('reads any kept version of an object definition; 404 for none', async () => {
    const ws = await newWorkspace();
    const v1 = { name: 'Deal', workspaceIds: [ws], fields: [{ name: 'amount', type: 'number' }] };
    const created = await admin('POST', '/admin/objects', v1);
    const v2 = { ...v1, nameTemplate: 'Deal {amount}' };
    await admin('PUT', `/admin/objects/${created.body.id}`, v2);
    expect((await admin('GET', `/admin/objects/${created.body.id}/versions/1`)).body).toEqual({
      id: created.body.id,
      version: 1,
      ...v1,
    });
    expect((await admin('GET', `/admin/objects/${created.body.id}/versions/2`)).body).toEqual({
      id: created.body.id,
      version: 2,
      ...v2,
    });
    expectProblem(await admin('GET', `/admin/objects/${created.body.id}/versions/3`), 404, 'not_found');
    expectProblem(await admin('GET', '/admin/objects/9999/versions/1'), 404, 'not_found');
  });
});
