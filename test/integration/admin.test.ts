import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index.ts';
import { admin, call, createOne, expectProblem, newObject, newUser, newWorkspace } from './helpers.ts';

const sha256 = async (text: string): Promise<string> =>
  [...new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))]
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('');

describe('admin API', () => {
  it('answers 503 when no ADMIN_TOKEN is configured, 401 for a wrong token', async () => {
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
    const { ADMIN_TOKEN: _configured, ...withoutAdminToken } = env;
    const res = await worker.fetch(
      new Request('http://x/admin/users', {
        method: 'POST',
        headers: { Authorization: 'Bearer anything', 'Content-Type': 'application/json' },
        body: '{"name":"a"}',
      }),
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
    const stored = await env.DB.prepare('SELECT key_hash FROM api_keys WHERE user_id = ?')
      .bind(created.body.id)
      .all<{ key_hash: string }>();
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
    const rows = await env.DB.prepare('SELECT role FROM memberships WHERE workspace_id = ? AND user_id = ?')
      .bind(ws, user.id)
      .all();
    expect(rows.results).toEqual([{ role: 'editor' }]);
    expectProblem(
      await admin('PUT', `/admin/workspaces/${ws}/members/${user.id}`, { role: 'owner' }),
      400,
      'invalid_request',
    );
    expectProblem(await admin('PUT', `/admin/workspaces/999/members/${user.id}`, { role: 'viewer' }), 404, 'not_found');
    expect((await admin('DELETE', `/admin/workspaces/${ws}/members/${user.id}`)).status).toBe(204);
    const after = await env.DB.prepare('SELECT count(*) AS n FROM memberships WHERE workspace_id = ?')
      .bind(ws)
      .first<{ n: number }>();
    expect(after?.n).toBe(0);
    expectProblem(await admin('DELETE', `/admin/workspaces/${ws}/members/424242`), 404, 'not_found');
  });

  it('keeps every version of an object definition', async () => {
    const ws = await newWorkspace();
    const definition = {
      name: 'Deal',
      workspaceIds: [ws],
      fields: [{ name: 'amount', type: 'number', required: true }],
    };
    const created = await admin('POST', '/admin/objects', definition);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(Number), version: 1, ...definition });
    const next = { ...definition, nameTemplate: '{title}', fields: [{ name: 'title', type: 'text' }] };
    const put = await admin('PUT', `/admin/objects/${created.body.id}`, next);
    expect(put.body).toEqual({ id: created.body.id, version: 2, ...next });
    const got = await admin('GET', `/admin/objects/${created.body.id}`);
    expect(got.body).toEqual(put.body);
    const versions = await env.DB.prepare('SELECT version FROM object_versions WHERE object_id = ? ORDER BY version')
      .bind(created.body.id)
      .all();
    expect(versions.results).toEqual([{ version: 1 }, { version: 2 }]);
    expectProblem(await admin('PUT', '/admin/objects/9999', next), 404, 'not_found');
    expectProblem(await admin('GET', '/admin/objects/9999'), 404, 'not_found');
  });

  it('rejects inconsistent definitions (400) and unknown workspaces (422)', async () => {
    const ws = await newWorkspace();
    const countObjects = async () =>
      (await env.DB.prepare('SELECT count(*) AS n FROM objects').first<{ n: number }>())?.n;
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
    expect(unknown.body.errors).toEqual([
      { pointer: '/workspaceIds/1', code: 'unknown_workspace', message: 'no such workspace' },
    ]);
    expect(await countObjects()).toBe(before);
  });

  it('lists users, workspaces and object definitions in keyset pages with signed cursors', async () => {
    const names = ['p1', 'p2', 'p3'];
    const ids: number[] = [];
    for (const name of names) ids.push((await admin('POST', '/admin/users', { name })).body.id);
    const all: { id: number; name: string }[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = await admin(
        'GET',
        `/admin/users?limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      all.push(...page.body.items);
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor !== null);
    const stored = await env.DB.prepare('SELECT id, name FROM users ORDER BY id').all<{ id: number; name: string }>();
    expect(all).toEqual(stored.results);
    expect(all.slice(-3)).toEqual(ids.map((id, i) => ({ id, name: names[i] })));
    expect(pages).toBe(Math.ceil(stored.results.length / 2));

    const ws = await newWorkspace();
    const object = await newObject([ws]);
    const workspaces = await admin('GET', '/admin/workspaces?limit=100');
    expect(workspaces.body.items).toContainEqual({ id: ws, name: 'ws' });
    expect(workspaces.body.nextCursor).toBeNull();
    const objects = await admin('GET', '/admin/objects');
    expect(objects.body.items.find((o: any) => o.id === object.id)).toEqual(object);
  });

  it(
    'refuses a bad page query, an edited cursor and a cursor of another list, naming the query ' + 'parameter',
    async () => {
      await newUser('a');
      await newUser('b');
      const first = await admin('GET', '/admin/users?limit=1');
      const cursor: string = first.body.nextCursor;
      expect(cursor).toEqual(expect.any(String));
      const edited = await admin('GET', `/admin/users?cursor=${encodeURIComponent(`${cursor.slice(0, -2)}AA`)}`);
      expectProblem(edited, 400, 'invalid_request');
      expect(edited.body.errors).toEqual([{ query: 'cursor', code: 'invalid_cursor', message: expect.any(String) }]);
      expectProblem(
        await admin('GET', `/admin/workspaces?cursor=${encodeURIComponent(cursor)}`),
        400,
        'invalid_request',
      );
      const bad = await admin('GET', '/admin/objects?limit=0&colour=red');
      expectProblem(bad, 400, 'invalid_request');
      expect(bad.body.errors.map((e: any) => [e.query, e.code])).toEqual([
        ['colour', 'unknown_parameter'],
        ['limit', 'out_of_range'],
      ]);
      expectProblem(await admin('GET', '/admin/users?limit=101'), 400, 'invalid_request');
      expectProblem(await call('GET', '/admin/users', { key: 'not-the-token' }), 401, 'unauthorized');
    },
  );

  it("lists a workspace's members by user id; an unknown workspace is 404", async () => {
    const [a, b] = [await newUser('a'), await newUser('b')];
    const ws = await newWorkspace({ [b.id]: 'viewer', [a.id]: 'editor' });
    const first = await admin('GET', `/admin/workspaces/${ws}/members?limit=1`);
    expect(first.body).toEqual({
      items: [{ workspaceId: ws, userId: a.id, role: 'editor' }],
      nextCursor: expect.any(String),
    });
    const second = await admin(
      'GET',
      `/admin/workspaces/${ws}/members?limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`,
    );
    expect(second.body).toEqual({ items: [{ workspaceId: ws, userId: b.id, role: 'viewer' }], nextCursor: null });
    // A cursor is bound to its workspace.
    const other = await newWorkspace();
    expectProblem(
      await admin('GET', `/admin/workspaces/${other}/members?cursor=${encodeURIComponent(first.body.nextCursor)}`),
      400,
      'invalid_request',
    );
    expect((await admin('GET', `/admin/workspaces/${other}/members`)).body).toEqual({ items: [], nextCursor: null });
    expectProblem(await admin('GET', '/admin/workspaces/424242/members'), 404, 'not_found');
  });

  it(
    'deletes a user: keys and memberships go in one batch, the key answers 401 at once, records keep ' +
      "the user's id",
    async () => {
      const user = await newUser('leaving');
      const second = (await admin('POST', `/admin/users/${user.id}/keys`)).body.key as string;
      const stayer = await newUser('staying');
      const ws = await newWorkspace({ [user.id]: 'editor', [stayer.id]: 'viewer' });
      const object = await newObject([ws]);
      const record = await createOne(user.key, object.id, [{ fieldName: 'firstName', value: 'Ada' }]);
      // A patch makes this isolate remember the caller behind the key (writes may be decided from
      // memory), so the 401 below proves it forgot the key at once.
      const patch = { fieldValues: [{ fieldName: 'lastName', value: 'Lovelace' }] };
      expect(
        (await call('PATCH', `/workspaces/${ws}/records/${record.id}`, { key: user.key, body: patch })).body.version,
      ).toBe(2);

      const deleted = await admin('DELETE', `/admin/users/${user.id}`);
      expect(deleted.status).toBe(204);
      expect(deleted.body).toBeUndefined();
      const again = { fieldValues: [{ fieldName: 'lastName', value: 'Byron' }] };
      expectProblem(
        await call('PATCH', `/workspaces/${ws}/records/${record.id}`, { key: user.key, body: again }),
        401,
        'unauthorized',
      );
      expectProblem(await call('GET', '/me', { key: second }), 401, 'unauthorized');
      const count = async (sql: string) => (await env.DB.prepare(sql).bind(user.id).first<{ n: number }>())?.n;
      expect(await count('SELECT count(*) AS n FROM api_keys WHERE user_id = ?')).toBe(0);
      expect(await count('SELECT count(*) AS n FROM memberships WHERE user_id = ?')).toBe(0);
      expect(await count('SELECT count(*) AS n FROM users WHERE id = ?')).toBe(0);
      // The other member and the record stay; the record still names its creator.
      expect((await admin('GET', `/admin/workspaces/${ws}/members`)).body.items).toEqual([
        { workspaceId: ws, userId: stayer.id, role: 'viewer' },
      ]);
      const read = await call('GET', `/records/${record.id}`, { key: stayer.key });
      expect(read.body).toMatchObject({
        id: record.id,
        version: 2,
        createdBy: user.id,
        updatedBy: user.id,
        ownedBy: user.id,
      });
      expect(read.body.fieldValues).toContainEqual({ fieldName: 'lastName', value: 'Lovelace' });

      expectProblem(await admin('DELETE', `/admin/users/${user.id}`), 404, 'not_found');
      expectProblem(await admin('DELETE', '/admin/users/abc'), 400, 'invalid_request');
    },
  );

  it(
    'deletes a workspace only while nothing keeps it: 409 naming the object definitions that list it, ' +
      'or its records',
    async () => {
      const user = await newUser();
      const ws = await newWorkspace({ [user.id]: 'editor' });
      const elsewhere = await newWorkspace();
      const object = await newObject([ws]);

      const listed = await admin('DELETE', `/admin/workspaces/${ws}`);
      expectProblem(listed, 409, 'conflict');
      expect(listed.body.errors).toEqual([
        {
          parameter: 'workspaceId',
          code: 'workspace_in_use',
          message: `object definition ${object.id} lists this workspace`,
        },
      ]);
      const memberships = async () =>
        (
          await env.DB.prepare('SELECT count(*) AS n FROM memberships WHERE workspace_id = ?')
            .bind(ws)
            .first<{ n: number }>()
        )?.n;
      expect(await memberships()).toBe(1);

      // A record shared with it keeps it even once no definition lists it (records are never deleted).
      await createOne(user.key, object.id, [{ fieldName: 'firstName', value: 'Ada' }]);
      const definition = { name: 'Contact', workspaceIds: [elsewhere], fields: [{ name: 'firstName', type: 'text' }] };
      expect((await admin('PUT', `/admin/objects/${object.id}`, definition)).status).toBe(200);
      const shared = await admin('DELETE', `/admin/workspaces/${ws}`);
      expectProblem(shared, 409, 'conflict');
      expect(shared.body.errors).toEqual([
        { parameter: 'workspaceId', code: 'workspace_in_use', message: 'records are shared with this workspace' },
      ]);

      // A workspace nothing keeps goes, with its memberships.
      const free = await newWorkspace({ [user.id]: 'viewer' });
      expect((await admin('DELETE', `/admin/workspaces/${free}`)).status).toBe(204);
      expect(
        (await env.DB.prepare('SELECT count(*) AS n FROM workspaces WHERE id = ?').bind(free).first<{ n: number }>())
          ?.n,
      ).toBe(0);
      expect(
        (
          await env.DB.prepare('SELECT count(*) AS n FROM memberships WHERE workspace_id = ?')
            .bind(free)
            .first<{ n: number }>()
        )?.n,
      ).toBe(0);
      expect((await call('GET', '/me', { key: user.key })).body.workspaces).toEqual([
        { workspaceId: ws, name: 'ws', role: 'editor' },
      ]);
      expectProblem(await admin('DELETE', `/admin/workspaces/${free}`), 404, 'not_found');
    },
  );
});
