import { env } from 'cloudflare:workers';
import { ofTenant, TENANT_TABLES } from '../../src/tenancy/tenant-tables.ts';
import { admin, call } from './helpers.ts';

/** What the move tests share: a tenant to move, its mover driven a step at a time, its rows where they are. */

export const database = (name: string): D1Database =>
  (env as unknown as Record<string, D1Database>)[name] as D1Database;

/** The test build's tenant object (test/integration/worker.ts): held, its alarms do nothing. */
export interface Mover {
  hold(): Promise<void>;
  release(): Promise<void>;
  /** One step; when the next is due. */
  stepOnce(): Promise<number | null>;
}
export const mover = (tenantId: number): Mover => env.TENANTS.getByName(String(tenantId)) as unknown as Mover;

export interface MovingTenant {
  id: number;
  adminKey: string;
  key: string;
  userId: number;
  workspaceId: number;
  objectId: number;
  companyObjectId: number;
}

/** A tenant on `at`, built by its administrator: an editor of a workspace holding a Contact object. */
export async function movingTenant(at: string, name = 'Mover'): Promise<MovingTenant> {
  const made = await admin('POST', '/tenants', { name, database: at });
  if (made.status !== 201) throw new Error(`tenant: ${made.status} ${JSON.stringify(made.body)}`);
  const adminKey = made.body.adminKey as string;
  const as = (method: string, path: string, body?: unknown) =>
    call(method, path, { key: adminKey, ...(body === undefined ? {} : { body }) });
  const user = await as('POST', '/admin/users', { name: 'editor' });
  const key = await as('POST', `/admin/users/${user.body.id}/keys`);
  const workspace = await as('POST', '/admin/workspaces', { name: 'ws' });
  await as('PUT', `/admin/workspaces/${workspace.body.id}/members/${user.body.id}`, { role: 'editor' });
  const company = await as('POST', '/admin/objects', {
    name: 'Company',
    workspaceIds: [workspace.body.id],
    nameTemplate: '{title}',
    fields: [{ name: 'title', type: 'text' }],
  });
  const object = await as('POST', '/admin/objects', {
    name: 'Contact',
    workspaceIds: [workspace.body.id],
    nameTemplate: '{firstName}',
    fields: [
      { name: 'firstName', type: 'text', required: true },
      { name: 'email', type: 'email', unique: true },
      { name: 'score', type: 'number', indexed: true },
      { name: 'company', type: 'reference', target: company.body.id },
    ],
  });
  if (object.status !== 201) throw new Error(`object: ${object.status} ${JSON.stringify(object.body)}`);
  return {
    id: made.body.id,
    adminKey,
    key: key.body.key,
    userId: user.body.id,
    workspaceId: workspace.body.id,
    objectId: object.body.id,
    companyObjectId: company.body.id,
  };
}

/** Runs steps of the tenant's move until `until` says stop (by default: the move has ended); the move then. */
export async function stepMove(
  tenantId: number,
  moveId: number,
  until: (move: any) => boolean = (move) => ['succeeded', 'failed', 'cancelled'].includes(move.status),
): Promise<any> {
  for (let i = 0; i < 10_000; i++) {
    const move = await admin('GET', `/tenants/${tenantId}/moves/${moveId}`);
    if (until(move.body)) return move.body;
    await mover(tenantId).stepOnce();
  }
  throw new Error('the move never got there');
}

/** Every row the tenant owns on a database, by table (JSON text of each row, in key order). */
export async function rowsOf(tenantId: number, on: string): Promise<Record<string, string[]>> {
  const db = database(on);
  const rows: Record<string, string[]> = {};
  for (const t of TENANT_TABLES) {
    const { where, values } = ofTenant(t, tenantId);
    const object = `json_object(${t.columns.map((c) => `'${c}', ${c}`).join(', ')})`;
    const { results } = await db
      .prepare(`SELECT ${object} AS row FROM ${t.table} WHERE ${where} ORDER BY ${t.key.join(', ')}`)
      .bind(...values)
      .all<{ row: string }>();
    rows[t.table] = results.map((r) => r.row);
  }
  return rows;
}

/** How many rows the tenant owns on a database. */
export async function countOf(tenantId: number, on: string): Promise<number> {
  return Object.values(await rowsOf(tenantId, on)).reduce((n, rows) => n + rows.length, 0);
}
