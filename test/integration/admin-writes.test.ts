import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, admin, call, countRows, expectProblem, newObject, newUser, newWorkspace } from './helpers.ts';

/** An admin call answered as raw text, to compare replays byte for byte. */
async function raw(method: string, path: string, options: { body?: unknown; key?: string } = {}) {
  const headers: Record<string, string> = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  if (options.key !== undefined) headers['Idempotency-Key'] = options.key;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await exports.default.fetch(`http://records.test${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const ledgerRows = () => countRows('writes');

describe('admin writes: one ledger row each, Idempotency-Key replays byte for byte', () => {
  it('every admin write commits exactly one ledger row, failures included', async () => {
    const before = await ledgerRows();
    const user = await newUser(); // a user and a key: 2 writes
    const ws = await newWorkspace({ [user.id]: 'editor' }); // a workspace and a member: 2 writes
    const object = await newObject([ws]); // 1 write
    await admin('PUT', `/admin/objects/${object.id}`, { name: 'v2', workspaceIds: [ws], fields: [] }); // 1
    expectProblem(await admin('DELETE', '/admin/users/999999'), 404, 'not_found'); // 1 (a failure)
    expect(await ledgerRows()).toBe(before + 7);
  });

  it(
    'a keyed create user is replayed byte for byte and creates one user; another body is 422 and writes' + ' nothing',
    async () => {
      const users = await countRows('users');
      const first = await raw('POST', '/admin/users', { body: { name: 'Ada' }, key: 'user-1' });
      const again = await raw('POST', '/admin/users', { body: { name: 'Ada' }, key: 'user-1' });
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.text).toBe(first.text);
      expect(again.headers.get('Idempotent-Replayed')).toBe('true');
      expect(again.headers.get('Content-Type')).toBe('application/json');
      expect(await countRows('users')).toBe(users + 1);
      const other = await raw('POST', '/admin/users', { body: { name: 'Bob' }, key: 'user-1' });
      expect(other.status).toBe(422);
      expect(JSON.parse(other.text).errors[0]).toMatchObject({
        header: 'Idempotency-Key',
        code: 'idempotency_key_reused',
      });
      expect(await countRows('users')).toBe(users + 1);
      // The key is the admin's own: the same key on another operation runs that operation.
      const ws = await raw('POST', '/admin/workspaces', { body: { name: 'Ada' }, key: 'user-1' });
      expect([ws.status, JSON.parse(ws.text).name]).toEqual([201, 'Ada']);
    },
  );

  it('a keyed key issue is replayed with the same working key; only its hash is stored', async () => {
    const user = await newUser();
    const ws = await newWorkspace({ [user.id]: 'viewer' });
    const first = await raw('POST', `/admin/users/${user.id}/keys`, { key: 'key-1' });
    const again = await raw('POST', `/admin/users/${user.id}/keys`, { key: 'key-1' });
    expect(first.status).toBe(201);
    expect(again.text).toBe(first.text);
    const issued = JSON.parse(first.text);
    expect(Object.keys(issued)).toEqual(['id', 'key', 'prefix', 'createdAt']);
    expect(issued.key.startsWith(issued.prefix)).toBe(true);
    expect((await call('GET', '/me', { key: issued.key })).body).toEqual({
      userId: user.id,
      name: 'user',
      admin: false,
      workspaces: [{ workspaceId: ws, name: 'ws', role: 'viewer' }],
    });
    const listed = (await admin('GET', `/admin/users/${user.id}/keys`)).body;
    expect(listed.map((k: { id: number }) => k.id)).toContain(issued.id);
    const ledger = await env.DB.prepare(
      "SELECT group_concat(outcome) AS all_ FROM writes WHERE outcome LIKE '%rk_%'",
    ).first<{ all_: string | null }>();
    expect(ledger?.all_ ?? '').not.toContain(issued.key);
  });

  it('keyed deletes replay 204; a failed keyed write stores nothing and its retry runs afresh', async () => {
    const user = await newUser();
    const ws = await newWorkspace();
    const missing = await raw('PUT', `/admin/workspaces/${ws}/members/999999`, {
      body: { role: 'editor' },
      key: 'm-1',
    });
    expect(missing.status).toBe(404);
    const put = await raw('PUT', `/admin/workspaces/${ws}/members/${user.id}`, {
      body: { role: 'editor' },
      key: 'm-2',
    });
    expect(JSON.parse(put.text)).toEqual({ workspaceId: ws, userId: user.id, role: 'editor' });
    const del = await raw('DELETE', `/admin/users/${user.id}`, { key: 'd-1' });
    const delAgain = await raw('DELETE', `/admin/users/${user.id}`, { key: 'd-1' });
    expect([del.status, del.text, delAgain.status, delAgain.text]).toEqual([204, '', 204, '']);
    expect(delAgain.headers.get('Idempotent-Replayed')).toBe('true');
    // Without the key, the user is gone.
    expectProblem(await admin('DELETE', `/admin/users/${user.id}`), 404, 'not_found');
    // The failed write left its key free: the same key with the same request runs again.
    const retry = await raw('PUT', `/admin/workspaces/${ws}/members/999999`, { body: { role: 'editor' }, key: 'm-1' });
    expect(retry.status).toBe(404);
    expect(retry.headers.get('Idempotent-Replayed')).toBeNull();
  });

  it('a keyed object definition update replays its version; the object moved once', async () => {
    const ws = await newWorkspace();
    const object = await newObject([ws]);
    const body = { name: 'Renamed', workspaceIds: [ws], fields: [{ name: 'a', type: 'text' }] };
    const first = await raw('PUT', `/admin/objects/${object.id}`, { body, key: 'o-1' });
    const again = await raw('PUT', `/admin/objects/${object.id}`, { body, key: 'o-1' });
    expect(again.text).toBe(first.text);
    expect(JSON.parse(first.text)).toEqual({
      id: object.id,
      version: 2,
      name: 'Renamed',
      workspaceIds: [ws],
      fields: [{ name: 'a', type: 'text' }],
    });
    expect((await admin('GET', `/admin/objects/${object.id}`)).body).toEqual(JSON.parse(first.text));
  });

  it('a malformed Idempotency-Key is 400 naming the header, listed with the body problems', async () => {
    const res = await call('POST', '/admin/workspaces', {
      key: ADMIN_TOKEN,
      body: { nam: 'x' },
      headers: { 'Idempotency-Key': 'has space' },
    });
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors.map((e: { header?: string; pointer?: string }) => e.header ?? e.pointer)).toEqual(
      expect.arrayContaining(['Idempotency-Key', '/nam']),
    );
    const del = await call('DELETE', '/admin/users/1', { key: ADMIN_TOKEN, headers: { 'Idempotency-Key': '' } });
    expectProblem(del, 400, 'invalid_request');
  });

  it('ids of deleted users and workspaces are never handed out again', async () => {
    const a = await newUser();
    const b = await newUser();
    expect((await admin('DELETE', `/admin/users/${b.id}`)).status).toBe(204);
    const c = await newUser();
    expect(c.id).toBeGreaterThan(b.id);
    expect(a.id).toBeLessThan(b.id);
    const w1 = await newWorkspace();
    expect((await admin('DELETE', `/admin/workspaces/${w1}`)).status).toBe(204);
    expect(await newWorkspace()).toBeGreaterThan(w1);
  });
});
