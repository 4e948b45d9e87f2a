import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index.ts';
import { admin, call, expectProblem, newUser, newWorkspace } from './helpers.ts';

const sha256 = async (text: string): Promise<string> =>
  [...new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))].map((b) => b.toString(16).padStart(2, '0')).join('');

describe('admin API (CONTRACT §4)', () => {
  it('answers 503 when no ADMIN_TOKEN is configured, 401 for a wrong token', async () => {
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
    const { ADMIN_TOKEN: _configured, ...withoutAdminToken } = env;
    const res = await worker.fetch(
      new Request('http://x/admin/users', { method: 'POST', headers: { Authorization: 'Bearer anything', 'Content-Type': 'application/json' }, body: '{"name":"a"}' }),
      withoutAdminToken,
      ctx,
    );
    expect(res.status).toBe(503);
    expect((await res.json<any>()).code).toBe('unavailable');
    const wrong = await call('POST', '/admin/users', { key: 'not-the-token', body: { name: 'a' } });
    expectProblem(wrong, 401, 'unauthorized');
    const users = await env.DB.prepare('SELECT count(*) AS n FROM users').first<{ n: number }>();
    expect(users?.n).toBe(0);
  });

  it('creates users and keys; only the hash of a key is stored and the key authenticates', async () => {
    const created = await admin('POST', '/admin/users', { name: 'Ada' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(Number), name: 'Ada' });
    const key = await admin('POST', `/admin/users/${created.body.id}/keys`);
    expect(key.status).toBe(201);
    expect(key.body.key).toMatch(/^rk_[A-Za-z0-9_-]{43}$/);
    const stored = await env.DB.prepare('SELECT key_hash FROM api_keys WHERE user_id = ?').bind(created.body.id).all<{ key_hash: string }>();
    expect(stored.results).toEqual([{ key_hash: await sha256(key.body.key) }]);
    // The key works: a valid key with no visible record gets 404, not 401.
    expectProblem(await call('GET', '/records/1', { key: key.body.key }), 404, 'not_found');
    expectProblem(await admin('POST', '/admin/users/424242/keys'), 404, 'not_found');
  });

  it('validates admin bodies strictly', async () => {
    const res = await admin('POST', '/admin/users', { name: '', nmae: 'x' });
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/name', 'invalid_length'],
      ['/nmae', 'unknown_property'],
    ]);
  });

  it('adds, changes and removes members', async () => {
    const user = await newUser();
    const ws = await newWorkspace();
    const put = await admin('PUT', `/admin/workspaces/${ws}/members/${user.id}`, { role: 'viewer' });
    expect(put.body).toEqual({ workspaceId: ws, userId: user.id, role: 'viewer' });
    await admin('PUT', `/admin/workspaces/${ws}/members/${user.id}`, { role: 'editor' });
    const rows = await env.DB.prepare('SELECT role FROM memberships WHERE workspace_id = ? AND user_id = ?').bind(ws, user.id).all();
    expect(rows.results).toEqual([{ role: 'editor' }]);
    expectProblem(await admin('PUT', `/admin/workspaces/${ws}/members/${user.id}`, { role: 'owner' }), 400, 'invalid_request');
    expectProblem(await admin('PUT', `/admin/workspaces/999/members/${user.id}`, { role: 'viewer' }), 404, 'not_found');
    expect((await admin('DELETE', `/admin/workspaces/${ws}/members/${user.id}`)).status).toBe(204);
    const after = await env.DB.prepare('SELECT count(*) AS n FROM memberships WHERE workspace_id = ?').bind(ws).first<{ n: number }>();
    expect(after?.n).toBe(0);
    expectProblem(await admin('DELETE', `/admin/workspaces/${ws}/members/424242`), 404, 'not_found');
  });

  it('keeps every version of an object definition', async () => {
    const ws = await newWorkspace();
    const definition = { name: 'Deal', workspaceIds: [ws], fields: [{ name: 'amount', type: 'number', required: true }] };
    const created = await admin('POST', '/admin/objects', definition);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(Number), version: 1, ...definition });
    const next = { ...definition, nameTemplate: '{title}', fields: [{ name: 'title', type: 'text' }] };
    const put = await admin('PUT', `/admin/objects/${created.body.id}`, next);
    expect(put.body).toEqual({ id: created.body.id, version: 2, ...next });
    const got = await admin('GET', `/admin/objects/${created.body.id}`);
    expect(got.body).toEqual(put.body);
    const versions = await env.DB.prepare('SELECT version FROM object_versions WHERE object_id = ? ORDER BY version').bind(created.body.id).all();
    expect(versions.results).toEqual([{ version: 1 }, { version: 2 }]);
    expectProblem(await admin('PUT', '/admin/objects/9999', next), 404, 'not_found');
    expectProblem(await admin('GET', '/admin/objects/9999'), 404, 'not_found');
  });

  it('rejects inconsistent definitions (400) and unknown workspaces (422)', async () => {
    const ws = await newWorkspace();
    const countObjects = async () => (await env.DB.prepare('SELECT count(*) AS n FROM objects').first<{ n: number }>())?.n;
    const before = await countObjects();
    const bad = await admin('POST', '/admin/objects', {
      name: 'X',
      workspaceIds: [ws, ws],
      nameTemplate: '{missing}',
      fields: [
        { name: 'a', type: 'select' },
        { name: 'a', type: 'text', options: ['x'] },
        { name: 'b', type: 'multiSelect', options: ['x', 'x'] },
        { name: '1c', type: 'colour' },
      ],
    });
    expectProblem(bad, 400, 'invalid_request');
    expect(bad.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/fields/3/name', 'invalid_format'],
      ['/fields/3/type', 'invalid_type'],
    ]);
    const semantic = await admin('POST', '/admin/objects', {
      name: 'X',
      workspaceIds: [ws, ws],
      nameTemplate: '{missing}',
      fields: [
        { name: 'a', type: 'select' },
        { name: 'a', type: 'text', options: ['x'] },
        { name: 'b', type: 'multiSelect', options: ['x', 'x'] },
      ],
    });
    expect(semantic.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/workspaceIds/1', 'duplicate'],
      ['/fields/0/options', 'required'],
      ['/fields/1/name', 'duplicate'],
      ['/fields/1/options', 'not_allowed'],
      ['/fields/2/options', 'duplicate'],
      ['/nameTemplate', 'unknown_field'],
    ]);
    const unknown = await admin('POST', '/admin/objects', { name: 'X', workspaceIds: [ws, 31337], fields: [] });
    expectProblem(unknown, 422, 'unprocessable');
    expect(unknown.body.errors).toEqual([{ pointer: '/workspaceIds/1', code: 'unknown_workspace', message: 'no such workspace' }]);
    expect(await countObjects()).toBe(before);
  });
});
