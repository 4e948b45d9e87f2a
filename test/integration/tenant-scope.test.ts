import { describe, expect, it } from 'vitest';
import { idRange } from '../../src/domain/tenant.ts';
import { placeOf } from '../../src/write/submit.ts';
import type { WriteCall } from '../../src/write/write.ts';
import { ADMIN_TOKEN, admin, call, createOne, fv, newObject, newUser, newWorkspace } from './helpers.ts';
import { database, mover, movingTenant, type MovingTenant } from './moving.ts';

/**
 * A request is routed to one tenant and touches no row outside that tenant's ids, whatever
 * rows of another tenant its database still holds: a tenant's rows left on the database it moved
 * away from, or a cancelled move's partial copy, never make its keys callers of the tenant that
 * database serves. The moments are held: the tenant's object runs its steps only when told.
 */

const start = (tenantId: number, to: string) =>
  call('POST', `/tenants/${tenantId}/move`, { key: ADMIN_TOKEN, body: { database: to } });

/** Steps the tenant's move until `done` says so. */
async function stepUntil(tenant: MovingTenant, done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (await done()) return;
    await mover(tenant.id).stepOnce();
  }
  throw new Error('the move never got there');
}

/** How many users and keys the default tenant has on DB. */
async function defaultTenantPeople(): Promise<{ users: number; keys: number }> {
  const { lo, hi } = idRange(1);
  const count = (table: string) =>
    database('DB')
      .prepare(`SELECT count(*) AS n FROM ${table} WHERE id >= ? AND id < ?`)
      .bind(lo, hi)
      .first<{ n: number }>();
  return { users: (await count('users'))?.n ?? -1, keys: (await count('api_keys'))?.n ?? -1 };
}

/** Everything the deleted tenant's keys try against the default tenant: each must be refused as no key. */
async function expectNoCaller(tenant: MovingTenant, defaultRecord: { id: number; workspaceId: number }) {
  const people = await defaultTenantPeople();
  const as = (key: string, method: string, path: string, body?: unknown) =>
    call(method, path, { key, ...(body === undefined ? {} : { body }) });
  const tries = [
    await as(tenant.adminKey, 'GET', '/admin/workspaces'),
    await as(tenant.adminKey, 'GET', '/admin/users'),
    await as(tenant.adminKey, 'POST', '/admin/users', { name: 'intruder' }),
    await as(tenant.adminKey, 'POST', '/admin/workspaces', { name: 'intruders' }),
    await as(tenant.adminKey, 'GET', '/me'),
    await as(tenant.key, 'GET', `/records/${defaultRecord.id}`),
    await as(tenant.key, 'GET', `/workspaces/${defaultRecord.workspaceId}/records`),
    await as(tenant.key, 'GET', '/me'),
  ];
  expect(tries.map((answer) => [answer.status, answer.body.code])).toEqual(tries.map(() => [401, 'unauthorized']));
  expect(await defaultTenantPeople()).toEqual(people);
}

/** A record of the default tenant, in a workspace of its own: what an intruder would want. */
async function defaultTenantRecord(): Promise<{ id: number; workspaceId: number }> {
  const owner = await newUser('owner');
  const workspaceId = await newWorkspace({ [owner.id]: 'editor' });
  const object = await newObject([workspaceId]);
  const record = await createOne(owner.key, object.id, [fv('firstName', 'Secret')]);
  return { id: record.id as number, workspaceId };
}

describe("a tenant's keys reach its own tenant alone", () => {
  it('a tenant moved off DB and deleted while its rows still wait there has no caller on DB', async () => {
    const target = await defaultTenantRecord();
    const tenant = await movingTenant('DB', 'Leaving');
    await mover(tenant.id).hold();
    expect((await start(tenant.id, 'DB_2')).status).toBe(202);
    // Switched: the catalog routes it to DB_2, and its rows wait on DB until the isolates forget the old route.
    await stepUntil(tenant, async () => (await admin('GET', `/tenants/${tenant.id}`)).body.database === 'DB_2');
    const waiting = await database('DB').prepare('SELECT count(*) AS n FROM users WHERE id = ?').bind(tenant.userId);
    expect(await waiting.first()).toEqual({ n: 1 });
    expect((await admin('DELETE', `/tenants/${tenant.id}`)).status).toBe(202);
    await expectNoCaller(tenant, target);
  });

  it('a tenant deleted while a cancelled move into DB removes its partial copy there has no caller on DB', async () => {
    const target = await defaultTenantRecord();
    const tenant = await movingTenant('DB_2', 'Arriving');
    await mover(tenant.id).hold();
    const move = await start(tenant.id, 'DB');
    expect(move.status).toBe(202);
    // Copied far enough that its users and keys are on DB, then cancelled: the copy is removed a chunk at a time.
    const copied = () =>
      database('DB').prepare('SELECT count(*) AS n FROM api_keys WHERE user_id = ?').bind(tenant.userId).first();
    await stepUntil(tenant, async () => ((await copied()) as { n: number }).n > 0);
    expect((await admin('DELETE', `/tenants/${tenant.id}/moves/${move.body.id}`)).status).toBe(200);
    // Its first step undoing the move: the tenant is back where it was, the copy on DB not yet all gone.
    await mover(tenant.id).stepOnce();
    expect((await admin('GET', `/tenants/${tenant.id}`)).body).toMatchObject({ database: 'DB_2', status: 'active' });
    expect(await copied()).toEqual({ n: 1 });
    expect((await admin('DELETE', `/tenants/${tenant.id}`)).status).toBe(202);
    await expectNoCaller(tenant, target);
  });

  it("a key of a live tenant is no caller of another tenant's database rows either", async () => {
    const target = await defaultTenantRecord();
    const tenant = await movingTenant('DB', 'Neighbour');
    // On the same database, the tenant's key reads its own records and nothing of the default tenant's.
    const own = await createOne(tenant.key, tenant.objectId, [fv('firstName', 'Mine')]);
    expect((await call('GET', `/records/${own.id}`, { key: tenant.key })).status).toBe(200);
    const theirs = await call('GET', `/records/${target.id}`, { key: tenant.key });
    const missing = await call('GET', `/records/${idRange(tenant.id).lo + 999_999}`, { key: tenant.key });
    expect([theirs.status, theirs.body]).toEqual([missing.status, missing.body]);
    const listed = await call('GET', '/admin/workspaces', { key: tenant.adminKey });
    expect(listed.body.items.map((w: { id: number }) => w.id)).toEqual([tenant.workspaceId]);
  });

  it("another tenant's record, object and workspace answer as missing ones: status, body, Server-Timing", async () => {
    const a = await movingTenant('DB', 'A');
    const b = await movingTenant('DB', 'B');
    // A large record of A's, and A's definition in this isolate's memory (as A's own requests leave it).
    const big = await createOne(a.key, a.objectId, [fv('firstName', 'x'.repeat(90_000))]);
    await call('GET', `/workspaces/${a.workspaceId}/records/export?objectId=${a.objectId}`, { key: a.key });
    const none = idRange(b.id).lo + 999_999;
    const cost = (answer: { headers: Headers }) =>
      (answer.headers.get('Server-Timing') ?? '').replace(/dur=[\d.]+/g, 'dur=_');
    const alike = async (path: (id: number) => string, method = 'GET', body?: (id: number) => unknown) => {
      const ask = (id: number) =>
        call(method, path(id), { key: b.key, ...(body === undefined ? {} : { body: body(id) }) });
      // Once first, so both asks below meet the same memory of the isolate (the caller's, say).
      await ask(1);
      const [foreign, missing] = [await ask(0), await ask(1)];
      expect([foreign.status, foreign.body, cost(foreign)], path(0)).toEqual([
        missing.status,
        missing.body,
        cost(missing),
      ]);
      return foreign;
    };
    const ids = (which: number, foreign: number) => (which === 0 ? foreign : none);
    const created = await alike(
      () => '/records/batch',
      'POST',
      (i) => [{ objectId: ids(i, a.objectId), fieldValues: [fv('firstName', 'x')] }],
    );
    expect(created.status).toBe(422);
    expect(
      (await alike((i) => `/workspaces/${b.workspaceId}/records/export?objectId=${ids(i, a.objectId)}`)).status,
    ).toBe(404);
    expect((await alike((i) => `/records/${ids(i, big.id)}`)).status).toBe(404);
    expect((await alike((i) => `/records/${ids(i, big.id)}/history`)).status).toBe(404);
    expect((await alike((i) => `/workspaces/${ids(i, a.workspaceId)}/records`)).status).toBe(404);
    expect((await alike((i) => `/workspaces/${ids(i, a.workspaceId)}/changes`)).status).toBe(404);
  });

  it("a write naming another tenant's record first never runs in that record's object", async () => {
    const a = await movingTenant('DB', 'Owner');
    const b = await movingTenant('DB', 'Prober');
    const theirs = await createOne(a.key, a.objectId, [fv('firstName', 'Theirs')]);
    const ours = await createOne(b.key, b.objectId, [fv('firstName', 'Ours')]);
    const callOf = (write: WriteCall['write']) =>
      ({ id: '0123456789abcdef', tenant: { id: b.id, database: 'DB', status: 'active' }, write }) as WriteCall;
    const batch = (id: number) => callOf({ kind: 'batch', items: [{ id, fieldValues: [] }] } as WriteCall['write']);
    expect(placeOf(batch(ours.id))).toBe(String(ours.id));
    expect(placeOf(batch(theirs.id))).not.toBe(String(theirs.id));
    // Through the API: as a missing record, and A's record as it was.
    const none = idRange(b.id).lo + 999_999;
    const patch = (id: number) =>
      call('PATCH', '/records/batch', { key: b.key, body: [{ id, fieldValues: [fv('firstName', 'Mine now')] }] });
    const [foreign, missing] = [await patch(theirs.id), await patch(none)];
    expect(foreign.status).toBe(missing.status);
    expect(JSON.stringify(foreign.body).replaceAll(String(theirs.id), 'ID')).toBe(
      JSON.stringify(missing.body).replaceAll(String(none), 'ID'),
    );
    expect((await call('GET', `/records/${theirs.id}`, { key: a.key })).body).toEqual(theirs);
  });

  it('a record its caller cannot see answers as a missing one on every path, however large', async () => {
    const tenant = await movingTenant('DB', 'Hiding');
    // Large: a text field holds at most 100,000 characters, a record's values 1 MiB.
    const big = await createOne(tenant.key, tenant.objectId, [fv('firstName', 'y'.repeat(100_000))]);
    const made = await call('POST', '/admin/users', { key: tenant.adminKey, body: { name: 'outsider' } });
    const outsider = (await call('POST', `/admin/users/${made.body.id}/keys`, { key: tenant.adminKey })).body.key;
    const none = idRange(tenant.id).lo + 999_999;
    const cost = (answer: { headers: Headers }) =>
      (answer.headers.get('Server-Timing') ?? '').replace(/dur=[\d.]+/g, 'dur=_');
    const paths: ((id: number) => [string, string])[] = [
      (id: number) => ['GET', `/records/${id}`],
      (id: number) => ['GET', `/records/${id}/history`],
      (id: number) => ['GET', `/records/${id}/referenced-by`],
      (id: number) => ['GET', `/workspaces/${tenant.workspaceId}/records/${id}`],
      (id: number) => ['DELETE', `/workspaces/${tenant.workspaceId}/records/${id}`],
    ];
    for (const path of paths) {
      const ask = (id: number) => {
        const [method, url] = path(id);
        return call(method, url, { key: outsider });
      };
      await ask(none);
      const [hidden, missing] = [await ask(big.id), await ask(none)];
      expect([hidden.status, hidden.body, cost(hidden)], path(big.id).join(' ')).toEqual([
        missing.status,
        missing.body,
        cost(missing),
      ]);
      expect(hidden.status).toBe(404);
    }
    expect((await call('GET', `/records/${big.id}`, { key: tenant.key })).body.version).toBe(1);
  });
});
