import { idRange } from '../domain/tenant.ts';
import type { D1 } from './sessions.ts';

/**
 * Ids of the entities that may be deleted (users, workspaces, keys, objects, webhooks, imports):
 * the next one in the tenant's block, never one handed out before (see migration 0019). Records
 * and changes are never deleted and take the highest of their block plus one instead.
 */
export type Sequenced = 'users' | 'workspaces' | 'api_keys' | 'objects' | 'webhooks' | 'imports' | 'roles' | 'files';

const TAKE = `INSERT INTO sequences (name, tenant, last) VALUES (?1, ?2, ?3)
  ON CONFLICT (name, tenant) DO UPDATE SET last = last + 1`;

/**
 * The next id of `table` for `tenant`: a statement that takes it (put it before the insert, in the
 * same D1 batch), and an SQL expression that reads it back there (in the insert, in the answer).
 */
export function nextId(db: D1, table: Sequenced, tenant: number): { take: D1PreparedStatement; id: string } {
  if (!Number.isSafeInteger(tenant) || tenant < 1) throw new Error(`no tenant ${tenant}`);
  return {
    take: db.prepare(TAKE).bind(table, tenant, idRange(tenant).lo + 1),
    id: `(SELECT last FROM sequences WHERE name = '${table}' AND tenant = ${tenant})`,
  };
}
