import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, admin, createOne, expectProblem, fv } from './helpers.ts';

const db = (name: string): D1Database => (env as unknown as Record<string, D1Database>)[name] as D1Database;

interface Mover {
  hold(): Promise<void>;
  release(): Promise<void>;
  stepOnce(): Promise<void>;
}
const mover = (tenantId: number): Mover => env.TENANTS.getByName(String(tenantId)) as unknown as Mover;

async function tenantWith(database: string) {
  const made = await admin('POST', '/tenants', { name: 'Mover', database });
  const adminKey = made.body.adminKey as string;
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
  return {
    id: made.body.id as number,
    adminKey,
    key: key.body.key as string,
    workspaceId: workspace.body.id,
    object: object.body,
  };
}

/** Runs the tenant's move to its end, a step at a time. */
async function runMove(tenantId: number, moveId: number): Promise<any> {
  for (let i = 0; i < 500; i++) {
    const move = await admin('GET', `/tenants/${tenantId}/moves/${moveId}`);
    if (['succeeded', 'failed', 'cancelled'].includes(move.body.status)) {
      await mover(tenantId).stepOnce();
      return move.body;
    }
    await mover(tenantId).stepOnce();
  }
  throw new Error('the move never ended');
}

describe('moving a tenant', () => {
  it('smoke', async () => {
    const t = await tenantWith('DB_2');
    await mover(t.id).hold();
    const a = await createOne(t.key, t.object.id, [fv('firstName', 'Ada'), fv('email', 'ada@x.test')]);
    const started = await admin('POST', `/tenants/${t.id}/move`, { database: 'DB_3' });
    expect(started.status).toBe(202);
    const move = await runMove(t.id, started.body.id);
    expect(move.status).toBe('succeeded');
    const read = await call('GET', `/records/${a.id}`, { key: t.key });
    expect(read.status).toBe(200);
    const left = await db('DB_2').prepare('SELECT count(*) AS n FROM records').first<{ n: number }>();
    const there = await db('DB_3').prepare('SELECT count(*) AS n FROM records').first<{ n: number }>();
    expect([left?.n, there?.n]).toEqual([0, 1]);
    void expectProblem;
  });
});
