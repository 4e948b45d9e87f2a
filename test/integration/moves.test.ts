import { describe, expect, it } from 'vitest';
import { Meter } from '../../src/storage/meter.ts';
import { TenantCopy } from '../../src/tenancy/tenant-copy.ts';
import { TenantData } from '../../src/tenancy/tenant-data.ts';
import { sabotage } from './worker.ts';
import { ADMIN_TOKEN, admin, call, createOne, expectProblem, fv } from './helpers.ts';
import { countOf, database, mover, movingTenant, rowsOf, stepMove } from './moving.ts';

/**
 * Moving a tenant to another database, through the operator's API: its answers, what it refuses,
 * cancelling, failing, and what the tenant finds on the new database. The tenant's object is held
 * and its steps run one at a time, so every test sees each moment it asks about.
 */

const start = (tenantId: number, body: unknown, headers: Record<string, string> = {}) =>
  call('POST', `/tenants/${tenantId}/move`, { key: ADMIN_TOKEN, body, headers });

describe('POST /tenants/{id}/move', () => {
  it('answers 202 with the move and where to follow it, then copies, switches and succeeds', async () => {
    const tenant = await movingTenant('DB_2');
    await mover(tenant.id).hold();
    const ada = await createOne(tenant.key, tenant.objectId, [fv('firstName', 'Ada'), fv('email', 'ada@x.test')]);
    const before = await rowsOf(tenant.id, 'DB_2');
    const started = await start(tenant.id, { database: 'DB_3' });
    expect(started.status).toBe(202);
    expect(started.body).toEqual({
      id: expect.any(Number),
      from: 'DB_2',
      to: 'DB_3',
      status: 'copying',
      rowsCopied: 0,
      startedAt: expect.any(Number),
    });
    expect(started.headers.get('Location')).toBe(`/tenants/${tenant.id}/moves/${started.body.id}`);
    expect((await admin('GET', `/tenants/${tenant.id}`)).body).toMatchObject({ database: 'DB_2', status: 'moving' });
    const read = await admin('GET', started.headers.get('Location') as string);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(started.body);

    const switched = await stepMove(tenant.id, started.body.id, (move) => move.status === 'switching');
    expect(switched.rowsCopied).toBeGreaterThanOrEqual(Object.values(before).flat().length);
    const done = await stepMove(tenant.id, started.body.id);
    expect(done).toEqual({
      ...started.body,
      status: 'succeeded',
      rowsCopied: expect.any(Number),
      finishedAt: expect.any(Number),
    });
    expect(await rowsOf(tenant.id, 'DB_3')).toEqual(before);
    expect(await countOf(tenant.id, 'DB_2')).toBe(0);
    expect((await admin('GET', `/tenants/${tenant.id}`)).body).toMatchObject({ database: 'DB_3', status: 'active' });
    // The tenant reads and writes where it is now.
    expect((await call('GET', `/records/${ada.id}`, { key: tenant.key })).body).toEqual(ada);
    const patched = await call('PATCH', `/workspaces/${tenant.workspaceId}/records/${ada.id}`, {
      key: tenant.key,
      body: { fieldValues: [fv('firstName', 'Augusta')] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.version).toBe(2);
    const stored = await database('DB_3').prepare('SELECT version FROM records WHERE id = ?').bind(ada.id).first();
    expect(stored).toEqual({ version: 2 });
  });

  it(
    'refuses bad input as problem+json: 400 for each problem of the body, the path or the key; ' +
      '422 for no such database',
    async () => {
      const tenant = await movingTenant('DB_2');
      const bad: [unknown, string][] = [
        [{}, '/database'],
        [{ database: 7 }, '/database'],
        [{ database: '' }, '/database'],
        [{ database: 'DB 3' }, '/database'],
        [{ database: 'x'.repeat(101) }, '/database'],
        [{ database: 'DB_3', region: 'weur' }, '/region'],
        [{ databse: 'DB_3' }, '/databse'],
        [[], ''],
        ['DB_3', ''],
      ];
      for (const [body, pointer] of bad) {
        const answer = await start(tenant.id, body);
        expectProblem(answer, 400, 'invalid_request');
        expect(answer.body.errors.map((e: any) => e.pointer)).toContain(pointer);
      }
      const malformed = await call('POST', `/tenants/${tenant.id}/move`, { key: ADMIN_TOKEN, raw: '{"database":' });
      expectProblem(malformed, 400, 'invalid_request');
      const unsent = await call('POST', `/tenants/${tenant.id}/move`, {
        key: ADMIN_TOKEN,
        raw: '{"database":"DB_3"}',
        headers: { 'Content-Type': 'text/plain' },
      });
      expectProblem(unsent, 415, 'unsupported_media_type');
      const badKey = await start(tenant.id, { database: 'DB_3' }, { 'Idempotency-Key': 'two words' });
      expectProblem(badKey, 400, 'invalid_request');
      expect(badKey.body.errors).toEqual([expect.objectContaining({ header: 'Idempotency-Key' })]);
      const badId = await start(Number.NaN, { database: 'DB_3' });
      expectProblem(badId, 400, 'invalid_request');
      expectProblem(
        await call('POST', '/tenants/x1/move', { key: ADMIN_TOKEN, body: { database: 'DB_3' } }),
        400,
        'invalid_request',
      );
      const nowhere = await start(tenant.id, { database: 'DB_9' });
      expectProblem(nowhere, 422, 'unprocessable');
      expect(nowhere.body.errors).toEqual([
        expect.objectContaining({ pointer: '/database', code: 'unknown_database' }),
      ]);
      expectProblem(await start(999_999, { database: 'DB_3' }), 404, 'not_found');
      // Nothing of that started a move.
      expect((await admin('GET', `/tenants/${tenant.id}`)).body.status).toBe('active');
    },
  );

  it(
    'is 409 for the default tenant, the database the tenant is on, a second move at a time, ' + 'and a deleting tenant',
    async () => {
      const tenant = await movingTenant('DB_2');
      await mover(tenant.id).hold();
      expectProblem(await start(1, { database: 'DB_2' }), 409, 'conflict');
      expectProblem(await start(tenant.id, { database: 'DB_2' }), 409, 'conflict');
      const first = await start(tenant.id, { database: 'DB_3' });
      expect(first.status).toBe(202);
      const second = await start(tenant.id, { database: 'DB' });
      expectProblem(second, 409, 'conflict');
      expect(second.headers.get('Location')).toBe(first.headers.get('Location'));
      // A moving tenant is not deleted under its move.
      expectProblem(await admin('DELETE', `/tenants/${tenant.id}`), 409, 'conflict');
      const gone = await movingTenant('DB_2', 'Gone');
      expect((await admin('DELETE', `/tenants/${gone.id}`)).status).toBe(202);
      expectProblem(await start(gone.id, { database: 'DB_3' }), 409, 'conflict');
    },
  );

  it('takes the admin token alone: an API key is 403, no token 401, on every move operation', async () => {
    const tenant = await movingTenant('DB_2');
    await mover(tenant.id).hold();
    const started = await start(tenant.id, { database: 'DB_3' });
    const path = `/tenants/${tenant.id}/moves/${started.body.id}`;
    for (const [method, to, body] of [
      ['POST', `/tenants/${tenant.id}/move`, { database: 'DB' }],
      ['GET', path, undefined],
      ['DELETE', path, undefined],
    ] as const) {
      for (const key of [tenant.key, tenant.adminKey])
        expectProblem(await call(method, to, { key, ...(body ? { body } : {}) }), 403, 'forbidden');
      expectProblem(await call(method, to, body ? { body } : {}), 401, 'unauthorized');
    }
    expect((await admin('GET', path)).body.status).toBe('copying');
  });

  it('answers a keyed move sent again as it first did; the same key for another database is 422', async () => {
    const tenant = await movingTenant('DB_2');
    await mover(tenant.id).hold();
    const headers = { 'Idempotency-Key': 'move-1' };
    const first = await start(tenant.id, { database: 'DB_3' }, headers);
    await mover(tenant.id).stepOnce();
    await mover(tenant.id).stepOnce();
    const again = await start(tenant.id, { database: 'DB_3' }, headers);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('Location')).toBe(first.headers.get('Location'));
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    const other = await start(tenant.id, { database: 'DB' }, headers);
    expectProblem(other, 422, 'unprocessable');
    expect(other.body.errors).toEqual([expect.objectContaining({ code: 'idempotency_key_reused' })]);
  });
});

describe('GET and DELETE /tenants/{id}/moves/{moveId}', () => {
  it("answers another tenant's move, an unknown one and a malformed id as missing or invalid", async () => {
    const tenant = await movingTenant('DB_2');
    const other = await movingTenant('DB_2', 'Other');
    await mover(tenant.id).hold();
    const started = await start(tenant.id, { database: 'DB_3' });
    expectProblem(await admin('GET', `/tenants/${other.id}/moves/${started.body.id}`), 404, 'not_found');
    expectProblem(await admin('DELETE', `/tenants/${other.id}/moves/${started.body.id}`), 404, 'not_found');
    expectProblem(await admin('GET', `/tenants/${tenant.id}/moves/999999`), 404, 'not_found');
    const malformed = await admin('GET', `/tenants/${tenant.id}/moves/abc`);
    expectProblem(malformed, 400, 'invalid_request');
    expect(malformed.body.errors).toEqual([expect.objectContaining({ parameter: 'moveId' })]);
    expectProblem(
      await admin('PATCH', `/tenants/${tenant.id}/moves/${started.body.id}`, {}),
      405,
      'method_not_allowed',
    );
  });

  it(
    'cancels a move that is copying: nothing changes, the partial copy leaves the target, ' +
      'cancelling again answers the same',
    async () => {
      const tenant = await movingTenant('DB_2');
      await mover(tenant.id).hold();
      const ada = await createOne(tenant.key, tenant.objectId, [fv('firstName', 'Ada')]);
      const before = await rowsOf(tenant.id, 'DB_2');
      const started = await start(tenant.id, { database: 'DB_3' });
      const path = `/tenants/${tenant.id}/moves/${started.body.id}`;
      await stepMove(tenant.id, started.body.id, (move) => move.rowsCopied > 0);
      expect(await countOf(tenant.id, 'DB_3')).toBeGreaterThan(0);
      const cancelled = await admin('DELETE', path);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toEqual({
        ...started.body,
        status: 'cancelled',
        rowsCopied: expect.any(Number),
        finishedAt: expect.any(Number),
      });
      expect((await admin('DELETE', path)).body).toEqual(cancelled.body);
      expect((await admin('GET', path)).body).toEqual(cancelled.body);
      // Its object removes the partial copy, a chunk a step.
      for (let i = 0; i < 50 && (await countOf(tenant.id, 'DB_3')) > 0; i++) await mover(tenant.id).stepOnce();
      expect(await countOf(tenant.id, 'DB_3')).toBe(0);
      expect(await rowsOf(tenant.id, 'DB_2')).toEqual(before);
      expect((await admin('GET', `/tenants/${tenant.id}`)).body).toMatchObject({ database: 'DB_2', status: 'active' });
      const patched = await call('PATCH', `/workspaces/${tenant.workspaceId}/records/${ada.id}`, {
        key: tenant.key,
        body: { fieldValues: [fv('firstName', 'Augusta')] },
      });
      expect(patched.status).toBe(200);
      // Nothing logs its changes any more, and a move can start again.
      const log = await database('DB_2').prepare('SELECT count(*) AS n FROM copy_log').first<{ n: number }>();
      expect(log?.n).toBe(0);
      const again = await start(tenant.id, { database: 'DB_3' });
      expect(again.status).toBe(202);
      expect((await stepMove(tenant.id, again.body.id)).status).toBe('succeeded');
      expect((await call('GET', `/records/${ada.id}`, { key: tenant.key })).body.version).toBe(2);
      expectProblem(await admin('DELETE', `/tenants/${tenant.id}/moves/${again.body.id}`), 409, 'conflict');
    },
  );

  it(
    'ends a move whose steps keep failing as failed, the tenant whole where it was; ' +
      'one that fails a while resumes',
    async () => {
      const tenant = await movingTenant('DB_2');
      await mover(tenant.id).hold();
      await createOne(tenant.key, tenant.objectId, [fv('firstName', 'Ada')]);
      const before = await rowsOf(tenant.id, 'DB_2');
      // A few failures: the move goes on from where it stood.
      const resumed = await start(tenant.id, { database: 'DB_3' });
      await mover(tenant.id).stepOnce();
      sabotage.target = 'DB_3';
      try {
        for (let i = 0; i < 3; i++) await mover(tenant.id).stepOnce();
      } finally {
        sabotage.target = '';
      }
      expect((await stepMove(tenant.id, resumed.body.id)).status).toBe('succeeded');
      expect(await rowsOf(tenant.id, 'DB_3')).toEqual(before);
      // Failing again and again: given up, the partial copy removed.
      const failing = await start(tenant.id, { database: 'DB_2' });
      await mover(tenant.id).stepOnce();
      sabotage.target = 'DB_2';
      try {
        for (let i = 0; i < 8; i++) await mover(tenant.id).stepOnce();
      } finally {
        sabotage.target = '';
      }
      const failed = await stepMove(tenant.id, failing.body.id, (move) => move.status !== 'copying');
      expect(failed).toEqual({
        ...failing.body,
        status: 'failed',
        rowsCopied: expect.any(Number),
        finishedAt: expect.any(Number),
        failure: expect.stringContaining('down'),
      });
      // Its object removes the partial copy and gives the tenant back its state.
      const moving = async () => (await admin('GET', `/tenants/${tenant.id}`)).body.status === 'moving';
      for (let i = 0; i < 50 && ((await countOf(tenant.id, 'DB_2')) > 0 || (await moving())); i++)
        await mover(tenant.id).stepOnce();
      expect(await countOf(tenant.id, 'DB_2')).toBe(0);
      expect(await rowsOf(tenant.id, 'DB_3')).toEqual(before);
      expect((await admin('GET', `/tenants/${tenant.id}`)).body).toMatchObject({ database: 'DB_3', status: 'active' });
    },
  );

  it('lets a step of the mover that another step displaced (a twin, a step run again) write nothing', async () => {
    const tenant = await movingTenant('DB_2');
    await createOne(tenant.key, tenant.objectId, [fv('firstName', 'Ada')]);
    const meter = new Meter();
    const [a, b] = ['a', 'b'].map(
      (runner) => new TenantCopy(database('DB_2'), database('DB_3'), meter, tenant.id, runner),
    ) as [TenantCopy, TenantCopy];
    await a.begin();
    await b.claim();
    await expect(a.copyChunk(0, null)).rejects.toThrow(/constraint/i);
    expect(await countOf(tenant.id, 'DB_3')).toBe(0);
    expect((await b.copyChunk(0, null)).rows).toBeGreaterThan(0);
    await expect(a.arrive()).rejects.toThrow(/constraint/i);
    // Left as it was: the source logs nothing, the target holds nothing of the tenant.
    await b.stay();
    const data = new TenantData(database('DB_3'), meter, tenant.id);
    while (await data.removeSome());
    await b.arrive();
    expect(await countOf(tenant.id, 'DB_3')).toBe(0);
  });
});
