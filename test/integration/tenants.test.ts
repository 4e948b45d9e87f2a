import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { TENANT_BLOCK } from '../../src/domain/tenant.ts';
import {
  ADMIN_TOKEN,
  admin,
  call,
  createOne,
  expectProblem,
  finished,
  fv,
  newObject,
  runScheduled,
  upload,
  world,
  type Answer,
} from './helpers.ts';

/**
 * Tenants: the operator's API, each tenant's administrators, and the wall between tenants, on the
 * same database and on different ones.
 */

const db = (name: string): D1Database => (env as unknown as Record<string, D1Database>)[name] as D1Database;

/** A new tenant on `database` through the operator's API, with its administrator's key. */
async function newTenant(name: string, database?: string): Promise<{ id: number; adminKey: string; database: string }> {
  const answer = await admin('POST', '/tenants', database === undefined ? { name } : { name, database });
  if (answer.status !== 201) throw new Error(`tenant not created: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** What the tenant's administrator builds: an editor of a workspace holding a Contact object, and one record. */
async function tenantWorld(adminKey: string) {
  const as = (method: string, path: string, body?: unknown) =>
    call(method, path, { key: adminKey, ...(body === undefined ? {} : { body }) });
  const user = await as('POST', '/admin/users', { name: 'editor' });
  const key = await as('POST', `/admin/users/${user.body.id}/keys`);
  const workspace = await as('POST', '/admin/workspaces', { name: 'ws' });
  await as('PUT', `/admin/workspaces/${workspace.body.id}/members/${user.body.id}`, { role: 'editor' });
  const object = await as('POST', '/admin/objects', {
    name: 'Contact',
    workspaceIds: [workspace.body.id],
    nameTemplate: '{firstName}',
    fields: [
      { name: 'firstName', type: 'text', required: true },
      { name: 'email', type: 'email', unique: true },
    ],
  });
  for (const answer of [user, key, workspace, object])
    if (answer.status !== 201) throw new Error(`setup: ${answer.status} ${JSON.stringify(answer.body)}`);
  const editor = { id: user.body.id as number, key: key.body.key as string };
  const record = await createOne(editor.key, object.body.id, [fv('firstName', 'Ada'), fv('email', 'ada@x.test')]);
  return {
    editor,
    workspaceId: workspace.body.id as number,
    object: object.body,
    record,
    keyId: key.body.id as number,
  };
}

const inBlock = (tenant: number, id: number) => id >= (tenant - 1) * TENANT_BLOCK && id < tenant * TENANT_BLOCK;

describe("the operator's API", () => {
  it(
    'creates, lists and reads tenants, each on a database, with' + ' an administrator whose key works at once',
    async () => {
      const created = await admin('POST', '/tenants', { name: 'Acme', database: 'DB_2' });
      expect(created.status).toBe(201);
      const tenant = created.body;
      expect(tenant).toEqual({
        id: expect.any(Number),
        name: 'Acme',
        database: 'DB_2',
        status: 'active',
        createdAt: expect.any(Number),
        adminKey: expect.stringMatching(new RegExp(`^rk${tenant.id}_[A-Za-z0-9_-]{20,}$`)),
      });
      expect(tenant.id).toBeGreaterThan(1);
      const { adminKey: _shownOnce, ...shown } = tenant;
      expect((await admin('GET', `/tenants/${tenant.id}`)).body).toEqual({ ...shown, fileBytes: 0 });
      const listed = await admin('GET', '/tenants?limit=100');
      expect(listed.body.items[0]).toEqual({ id: 1, name: 'default', database: 'DB', status: 'active', createdAt: 0 });
      expect(listed.body.items).toContainEqual(shown);
      expect(JSON.stringify(listed.body)).not.toContain('adminKey');
      // The administrator's key: the tenant's admin API, its first user an administrator.
      const users = await call('GET', '/admin/users', { key: tenant.adminKey });
      expect(users.status).toBe(200);
      expect(users.body.items).toEqual([{ id: expect.any(Number), name: 'administrator', admin: true }]);
      expect(inBlock(tenant.id, users.body.items[0].id)).toBe(true);
      // Its rows are on its database, none on DB.
      const onOwn = await db('DB_2')
        .prepare('SELECT count(*) AS n FROM users WHERE id = ?')
        .bind(users.body.items[0].id);
      expect((await onOwn.first<{ n: number }>())?.n).toBe(1);
      const onDb = await env.DB.prepare('SELECT count(*) AS n FROM users WHERE id = ?').bind(users.body.items[0].id);
      expect((await onDb.first<{ n: number }>())?.n).toBe(0);
    },
  );

  it(
    'puts a tenant without a database on the one with the most room;' +
      ' lists every database with its tenants and size',
    async () => {
      // DB holds the default tenant's rows; the other two are empty but for what tests put there.
      const before = (await admin('GET', '/databases')).body;
      expect(before.items.map((d: any) => d.name)).toEqual(['DB', 'DB_2', 'DB_3']);
      for (const item of before.items)
        expect(item).toEqual({
          name: item.name,
          tenants: expect.any(Number),
          bytes: expect.any(Number),
          fileBytes: expect.any(Number),
        });
      expect(before.items[0].tenants).toBeGreaterThanOrEqual(1);
      const smallest = [...before.items].sort((a: any, b: any) => a.bytes - b.bytes || a.tenants - b.tenants)[0];
      const placed = await newTenant('Placed');
      expect(placed.database).toBe(smallest.name);
      const after = (await admin('GET', '/databases')).body;
      const count = (list: any, name: string) => list.items.find((d: any) => d.name === name).tenants;
      expect(count(after, placed.database)).toBe(count(before, placed.database) + 1);
    },
  );

  it('a keyed create sent again answers the same tenant and the same key, and makes one tenant', async () => {
    const headers = { 'Idempotency-Key': 'tenant-once' };
    const first = await call('POST', '/tenants', {
      key: ADMIN_TOKEN,
      body: { name: 'Once', database: 'DB_3' },
      headers,
    });
    const again = await call('POST', '/tenants', {
      key: ADMIN_TOKEN,
      body: { name: 'Once', database: 'DB_3' },
      headers,
    });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    const listed = await admin('GET', '/tenants?limit=100');
    expect(listed.body.items.filter((t: any) => t.name === 'Once')).toHaveLength(1);
    // One administrator on its database, whose key works.
    const users = await call('GET', '/admin/users', { key: first.body.adminKey });
    expect(users.body.items).toHaveLength(1);
    const other = await call('POST', '/tenants', {
      key: ADMIN_TOKEN,
      body: { name: 'Other', database: 'DB_3' },
      headers,
    });
    expect(other.status).toBe(422);
    expect(other.body.errors).toEqual([
      expect.objectContaining({ header: 'Idempotency-Key', code: 'idempotency_key_reused' }),
    ]);
  });

  it('refuses bad bodies and paths, naming each problem, and creates nothing', async () => {
    const count = async () => (await env.DB.prepare('SELECT count(*) AS n FROM tenants').first<{ n: number }>())?.n;
    const before = await count();
    const bad = [
      {},
      { name: '' },
      { name: 'x'.repeat(201) },
      { name: 'a\u0001b' },
      { name: 7 },
      { name: 'Acme', database: 7 },
      { name: 'Acme', database: 'not a binding' },
      { name: 'Acme', extra: true },
    ];
    for (const body of bad) {
      const answer = await admin('POST', '/tenants', body);
      expectProblem(answer, 400, 'invalid_request');
      expect(answer.body.errors.length).toBeGreaterThan(0);
    }
    const unknown = await admin('POST', '/tenants', { name: 'Acme', database: 'DB_9' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors).toEqual([expect.objectContaining({ pointer: '/database', code: 'unknown_database' })]);
    expect(await count()).toBe(before);
    expectProblem(await admin('GET', '/tenants/99999'), 404, 'not_found');
    expectProblem(await admin('GET', '/tenants/abc'), 400, 'invalid_request');
    expectProblem(await admin('GET', '/tenants?limit=0'), 400, 'invalid_request');
    expectProblem(await admin('GET', '/tenants?cursor=nope'), 400, 'invalid_request');
  });

  it('answers any API key 403 and no key 401, the administrator of a tenant included', async () => {
    const { adminKey } = await newTenant('Keys', 'DB_2');
    const { editor } = await world();
    const paths: [string, string, unknown?][] = [
      ['POST', '/tenants', { name: 'Nope' }],
      ['GET', '/tenants'],
      ['GET', '/tenants/1'],
      ['DELETE', '/tenants/2'],
      ['GET', '/databases'],
    ];
    const before = (await admin('GET', '/tenants?limit=100')).body.items.length;
    for (const [method, path, body] of paths) {
      for (const key of [adminKey, editor.key]) {
        const answer = await call(method, path, { key, ...(body === undefined ? {} : { body }) });
        expectProblem(answer, 403, 'forbidden');
      }
      expectProblem(await call(method, path, body === undefined ? {} : { body }), 401, 'unauthorized');
      expectProblem(
        await call(method, path, { key: 'wrong', ...(body === undefined ? {} : { body }) }),
        401,
        'unauthorized',
      );
    }
    expect((await admin('GET', '/tenants?limit=100')).body.items.length).toBe(before);
  });
});

describe('tenant administrators', () => {
  it("run their own tenant's admin API with their key; a key that is no administrator's is 403", async () => {
    const tenant = await newTenant('Admins', 'DB_2');
    const { editor, workspaceId, object } = await tenantWorld(tenant.adminKey);
    for (const id of [editor.id, workspaceId, object.id]) expect(inBlock(tenant.id, id)).toBe(true);
    // A second administrator, made by the first.
    const second = await call('POST', '/admin/users', { key: tenant.adminKey, body: { name: 'Grace', admin: true } });
    expect(second.body).toEqual({ id: expect.any(Number), name: 'Grace', admin: true });
    const key = await call('POST', `/admin/users/${second.body.id}/keys`, { key: tenant.adminKey });
    expect(key.body.key.startsWith(`rk${tenant.id}_`)).toBe(true);
    const workspaces = await call('GET', '/admin/workspaces', { key: key.body.key });
    expect(workspaces.body.items).toEqual([{ id: workspaceId, name: 'ws' }]);
    // An editor's key is no administrator's.
    for (const [method, path] of [
      ['GET', '/admin/users'],
      ['POST', '/admin/workspaces'],
      ['GET', `/admin/objects/${object.id}`],
    ] as const) {
      const answer = await call(method, path, {
        key: editor.key,
        ...(method === 'POST' ? { body: { name: 'x' } } : {}),
      });
      expectProblem(answer, 403, 'forbidden');
    }
    expect((await call('GET', '/admin/workspaces', { key: tenant.adminKey })).body.items).toHaveLength(1);
    // The admin token stays the default tenant's: none of this tenant's users is listed to it.
    const listed: number[] = [];
    let cursor: string | null = null;
    do {
      const page: Answer = await admin('GET', `/admin/users?limit=100${cursor === null ? '' : `&cursor=${cursor}`}`);
      listed.push(...page.body.items.map((u: any) => u.id));
      cursor = page.body.nextCursor;
    } while (cursor !== null);
    expect(listed.every((id) => inBlock(1, id))).toBe(true);
  });
});

/** What decides whether two answers can be told apart: status, body and the D1 and object work Server-Timing shows. */
const TIMING = /d1;dur=[\d.]+;desc="(\d+) round trips?", do;dur=[\d.]+;desc="(\d+) calls?"/;
function seen(answer: Answer) {
  const timing = answer.headers.get('Server-Timing') ?? '';
  const match = TIMING.exec(timing);
  const rows = /rows;desc="(\d+) written, (\d+) read"/.exec(timing);
  return {
    status: answer.status,
    body: answer.body,
    d1: match?.[1],
    calls: match?.[2],
    rowsWritten: rows?.[1],
  };
}

/** Ids no tenant was given, in `tenant`'s block. */
const never = (tenant: number) => (tenant - 1) * TENANT_BLOCK + 900_000_000;

interface Ids {
  record: number;
  workspace: number;
  object: number;
  user: number;
  key: number;
  webhook: number;
  import: number;
}

/** Every request a key may make naming ids: the same one with another tenant's ids and with ids never issued. */
function requests(ids: Ids): [string, string, unknown?][] {
  const { record: r, workspace: w, object: o, webhook: h, import: i } = ids;
  return [
    ['GET', `/records/${r}`],
    ['GET', `/records/${r}/referenced-by`],
    ['GET', `/workspaces/${w}/records/${r}`],
    ['PATCH', `/workspaces/${w}/records/${r}`, { fieldValues: [fv('firstName', 'Eve')] }],
    ['DELETE', `/workspaces/${w}/records/${r}`],
    ['POST', `/workspaces/${w}/records/${r}/restore`],
    ['GET', `/workspaces/${w}/records`],
    ['GET', `/workspaces/${w}/changes`],
    ['POST', `/workspaces/${w}/records/query`, {}],
    ['GET', `/workspaces/${w}/records/export`],
    ['GET', `/workspaces/${w}/imports`],
    ['GET', `/workspaces/${w}/webhooks`],
    ['POST', `/workspaces/${w}/webhooks`, { url: 'https://example.com/hook' }],
    ['PATCH', `/workspaces/${w}/webhooks/${h}`, { status: 'paused' }],
    ['DELETE', `/workspaces/${w}/webhooks/${h}`],
    ['GET', `/workspaces/${w}/webhooks/${h}/deliveries`],
    ['GET', `/imports/${i}`],
    ['GET', `/imports/${i}/errors`],
    ['DELETE', `/imports/${i}`],
    ['POST', '/records/batch', [{ objectId: o, fieldValues: [fv('firstName', 'Eve')] }]],
    ['PATCH', '/records/batch', [{ id: r, fieldValues: [fv('firstName', 'Eve')] }]],
    ['PATCH', `/workspaces/${w}/records/batch`, [{ id: r, fieldValues: [fv('firstName', 'Eve')] }]],
    [
      'POST',
      `/objects/${o}/records/upsert`,
      { matchOn: 'email', fieldValues: [fv('firstName', 'Eve'), fv('email', 'ada@x.test')] },
    ],
  ];
}

/** The admin API's requests naming ids, made by a tenant's administrator. */
function adminRequests(ids: Ids, own: { workspace: number; user: number }): [string, string, unknown?][] {
  const { workspace: w, object: o, user: u, key: k } = ids;
  return [
    ['DELETE', `/admin/users/${u}`],
    ['POST', `/admin/users/${u}/keys`],
    ['GET', `/admin/users/${u}/keys`],
    ['DELETE', `/admin/keys/${k}`],
    ['DELETE', `/admin/workspaces/${w}`],
    ['GET', `/admin/workspaces/${w}/members`],
    ['PUT', `/admin/workspaces/${w}/members/${own.user}`, { role: 'editor' }],
    ['PUT', `/admin/workspaces/${own.workspace}/members/${u}`, { role: 'editor' }],
    ['DELETE', `/admin/workspaces/${w}/members/${u}`],
    ['GET', `/admin/objects/${o}`],
    ['GET', `/admin/objects/${o}/versions/1`],
    ['PUT', `/admin/objects/${o}`, { name: 'X', workspaceIds: [own.workspace], fields: [{ name: 'a', type: 'text' }] }],
    ['POST', '/admin/objects', { name: 'X', workspaceIds: [w], fields: [{ name: 'a', type: 'text' }] }],
  ];
}

/** A tenant with everything a key could name: a record, its workspace, object, users, a key, a webhook, an import. */
async function fullTenant(adminKey: string) {
  const built = await tenantWorld(adminKey);
  const hook = await call('POST', `/workspaces/${built.workspaceId}/webhooks`, {
    key: built.editor.key,
    body: { url: 'https://example.com/hook' },
  });
  const started = await upload(
    built.editor.key,
    built.workspaceId,
    `objectId=${built.object.id}`,
    '{"fieldValues":[]}\n',
  );
  await finished(built.editor.key, started.body.id);
  const ids: Ids = {
    record: built.record.id,
    workspace: built.workspaceId,
    object: built.object.id,
    user: built.editor.id,
    key: built.keyId,
    webhook: hook.body.id,
    import: started.body.id,
  };
  return { ...built, ids };
}

describe('nothing crosses tenants', () => {
  it(
    "another tenant's ids answer exactly as ids never issued (status, body," +
      ' Server-Timing), on the same database and on another',
    async () => {
      const owner = await newTenant('Owner', 'DB_2');
      const near = await newTenant('Near', 'DB_2');
      const far = await newTenant('Far', 'DB_3');
      const theirs = await fullTenant(owner.adminKey);
      for (const intruder of [near, far]) {
        const mine = await tenantWorld(intruder.adminKey);
        // The owner used everything lately: this isolate remembers its record, object and caller.
        expect((await call('GET', `/records/${theirs.record.id}`, { key: theirs.editor.key })).status).toBe(200);
        await call('GET', '/me', { key: mine.editor.key });
        await call('GET', '/admin/users', { key: intruder.adminKey });
        const missing = requests(mapIds(theirs.ids, () => never(intruder.id)));
        const foreign = requests(theirs.ids);
        for (let n = 0; n < foreign.length; n++) {
          const [method, path, body] = foreign[n]!;
          const [, missingPath, missingBody] = missing[n]!;
          const a = seen(await call(method, path, { key: mine.editor.key, ...(body === undefined ? {} : { body }) }));
          const b = seen(
            await call(method, missingPath, {
              key: mine.editor.key,
              ...(missingBody === undefined ? {} : { body: missingBody }),
            }),
          );
          expect(a, `${method} ${path}`).toEqual(b);
          expect(a.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
        }
        const own = { workspace: mine.workspaceId, user: mine.editor.id };
        const foreignAdmin = adminRequests(theirs.ids, own);
        const missingAdmin = adminRequests(
          mapIds(theirs.ids, () => never(intruder.id)),
          own,
        );
        for (let n = 0; n < foreignAdmin.length; n++) {
          const [method, path, body] = foreignAdmin[n]!;
          const [, missingPath, missingBody] = missingAdmin[n]!;
          const a = seen(await call(method, path, { key: intruder.adminKey, ...(body === undefined ? {} : { body }) }));
          const b = seen(
            await call(method, missingPath, {
              key: intruder.adminKey,
              ...(missingBody === undefined ? {} : { body: missingBody }),
            }),
          );
          expect(a, `${method} ${path}`).toEqual(b);
          expect(a.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
        }
      }
      // Nothing of the owner's changed: its record, its one version, its user's keys and membership.
      const read = await call('GET', `/records/${theirs.record.id}`, { key: theirs.editor.key });
      expect([read.body.version, read.body.deleted, read.body.fieldValues[0]]).toEqual([
        1,
        false,
        fv('firstName', 'Ada'),
      ]);
      const keys = await call('GET', `/admin/users/${theirs.editor.id}/keys`, { key: owner.adminKey });
      expect(keys.body).toHaveLength(1);
      const members = await call('GET', `/admin/workspaces/${theirs.workspaceId}/members`, { key: owner.adminKey });
      expect(members.body.items).toEqual([
        { workspaceId: theirs.workspaceId, userId: theirs.editor.id, role: 'editor' },
      ]);
      const hook = await call('GET', `/workspaces/${theirs.workspaceId}/webhooks`, { key: theirs.editor.key });
      expect(hook.body.items.map((h: any) => h.status)).toEqual(['active']);
    },
  );

  it(
    "the default tenant's keys see nothing of another tenant, and a" + " tenant's keys nothing of the default tenant's",
    async () => {
      const other = await newTenant('Other', 'DB');
      const theirs = await fullTenant(other.adminKey);
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
      for (const [key, id] of [
        [editor.key, theirs.record.id],
        [theirs.editor.key, record.id],
      ] as const) {
        expectProblem(await call('GET', `/records/${id}`, { key }), 404, 'not_found');
      }
      // The default tenant's workspace, named by the other tenant's administrator: no such workspace.
      expectProblem(
        await call('GET', `/admin/workspaces/${workspaceId}/members`, { key: other.adminKey }),
        404,
        'not_found',
      );
      // Unique values are each tenant's own: the same email in both.
      const again = await createOne(
        editor.key,
        (
          await newObject([workspaceId], {
            name: 'C',
            nameTemplate: '{firstName}',
            fields: [
              { name: 'firstName', type: 'text' },
              { name: 'email', type: 'email', unique: true },
            ],
          })
        ).id,
        [fv('firstName', 'Ada'), fv('email', 'ada@x.test')],
      );
      expect(again.version).toBe(1);
    },
  );

  it(
    'gives ids in each tenant’s block: every record, change, user,' + ' workspace, object, key, webhook and import',
    async () => {
      const tenant = await newTenant('Blocks', 'DB_3');
      const built = await fullTenant(tenant.adminKey);
      for (const [name, id] of Object.entries(built.ids)) expect(inBlock(tenant.id, id), `${name} ${id}`).toBe(true);
      const changes = await db('DB_3')
        .prepare('SELECT seq FROM changes WHERE record_id = ?')
        .bind(built.record.id)
        .all<{ seq: number }>();
      expect(changes.results.length).toBe(1);
      for (const { seq } of changes.results) expect(inBlock(tenant.id, seq)).toBe(true);
      // The feed's cursor goes on from there.
      const feed = await call('GET', `/workspaces/${built.workspaceId}/changes`, { key: built.editor.key });
      expect(feed.body.items.map((c: any) => c.recordId)).toEqual([built.record.id]);
    },
  );
});

describe('deleting a tenant', () => {
  it('stops its keys at once, removes its rows, files and objects in the background, then answers 404', async () => {
    const tenant = await newTenant('Leaving', 'DB_2');
    const stays = await newTenant('Staying', 'DB_2');
    const gone = await fullTenant(tenant.adminKey);
    const kept = await fullTenant(stays.adminKey);
    const deleted = await admin('DELETE', `/tenants/${tenant.id}`);
    expect(deleted.status).toBe(202);
    expect(deleted.body).toMatchObject({ id: tenant.id, status: 'deleting' });
    // At once: its keys, the administrator's included, are unknown keys.
    expectProblem(await call('GET', `/records/${gone.record.id}`, { key: gone.editor.key }), 401, 'unauthorized');
    expectProblem(await call('GET', '/admin/users', { key: tenant.adminKey }), 401, 'unauthorized');
    const write = await call('POST', '/records/batch', {
      key: gone.editor.key,
      body: [{ objectId: gone.object.id, fieldValues: [fv('firstName', 'Late')] }],
    });
    expectProblem(write, 401, 'unauthorized');
    // In the background: every row of its block goes, and then the tenant is 404.
    const until = Date.now() + 20_000;
    while ((await admin('GET', `/tenants/${tenant.id}`)).status !== 404) {
      if (Date.now() > until) throw new Error('tenant still there');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const lo = (tenant.id - 1) * TENANT_BLOCK;
    const hi = tenant.id * TENANT_BLOCK;
    for (const [table, column] of [
      ['records', 'id'],
      ['changes', 'seq'],
      ['users', 'id'],
      ['api_keys', 'id'],
      ['workspaces', 'id'],
      ['memberships', 'workspace_id'],
      ['objects', 'id'],
      ['object_versions', 'object_id'],
      ['webhooks', 'id'],
      ['imports', 'id'],
      ['record_workspaces', 'record_id'],
      ['name_terms', 'workspace_id'],
      ['record_index', 'record_id'],
    ] as const) {
      const left = await db('DB_2')
        .prepare(`SELECT count(*) AS n FROM ${table} WHERE ${column} >= ? AND ${column} < ?`)
        .bind(lo, hi)
        .first<{ n: number }>();
      expect(left?.n, table).toBe(0);
    }
    const ledger = await db('DB_2')
      .prepare('SELECT count(*) AS n FROM writes WHERE id LIKE ?')
      .bind(`%-t${tenant.id}-%`)
      .first<{ n: number }>();
    expect(ledger?.n).toBe(0);
    const sequences = await db('DB_2')
      .prepare('SELECT count(*) AS n FROM sequences WHERE tenant = ?')
      .bind(tenant.id)
      .first<{ n: number }>();
    expect(sequences?.n).toBe(0);
    const files = await env.IMPORT_FILES.list();
    const imports = await db('DB_2').prepare('SELECT file FROM imports').all<{ file: string }>();
    expect(
      files.objects
        .map((o) => o.key)
        .filter((k) => !imports.results.some((r) => r.file === k) && k.includes(String(gone.ids.import))),
    ).toEqual([]);
    // Not listed; deleting again is 404; the tenant beside it on the same database is whole.
    expect((await admin('GET', '/tenants?limit=100')).body.items.map((t: any) => t.id)).not.toContain(tenant.id);
    expectProblem(await admin('DELETE', `/tenants/${tenant.id}`), 404, 'not_found');
    const read = await call('GET', `/records/${kept.record.id}`, { key: kept.editor.key });
    expect(read.body.fieldValues[0]).toEqual(fv('firstName', 'Ada'));
    expect((await call('GET', '/admin/users', { key: stays.adminKey })).body.items).toHaveLength(2);
    // Its id is never given again.
    const next = await newTenant('Next', 'DB_2');
    expect(next.id).toBeGreaterThan(tenant.id);
  });

  it(
    'refuses the default tenant (409) and a tenant that does not exist' +
      ' (404); the Cron Trigger resumes a lost removal',
    async () => {
      const refused = await admin('DELETE', '/tenants/1');
      expectProblem(refused, 409, 'conflict');
      expect((await admin('GET', '/tenants/1')).body.status).toBe('active');
      expectProblem(await admin('DELETE', '/tenants/424242'), 404, 'not_found');
      // A removal whose start was lost: the catalog says deleting, no object was told.
      const tenant = await newTenant('Lost', 'DB_3');
      const built = await tenantWorld(tenant.adminKey);
      await db('DB_3').prepare("INSERT INTO departures (tenant_id, state) VALUES (?, 'deleted')").bind(tenant.id).run();
      await env.DB.prepare("UPDATE tenants SET status = 'deleting' WHERE id = ?").bind(tenant.id).run();
      expect((await admin('GET', `/tenants/${tenant.id}`)).body.status).toBe('deleting');
      await runScheduled();
      const until = Date.now() + 20_000;
      while ((await admin('GET', `/tenants/${tenant.id}`)).status !== 404) {
        if (Date.now() > until) throw new Error('removal not resumed');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const left = await db('DB_3')
        .prepare('SELECT count(*) AS n FROM records WHERE id = ?')
        .bind(built.record.id)
        .first<{ n: number }>();
      expect(left?.n).toBe(0);
    },
  );
});

function mapIds(ids: Ids, to: (id: number) => number): Ids {
  return Object.fromEntries(Object.entries(ids).map(([name, id]) => [name, to(id)])) as unknown as Ids;
}
