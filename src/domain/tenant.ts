/**
 * Tenants as plain data. A tenant (an organization: its users, keys, workspaces, objects,
 * records, changes, webhooks and imports) lives on one database; several may share one. Every id
 * a tenant is given lies in a block of its own, the same in every table, so ids are unique across
 * every tenant and database, a tenant moves to another database without renumbering anything,
 * and an id says whose it is. The default tenant (1) has the first block: everything that existed
 * before tenants keeps its id.
 */

export const DEFAULT_TENANT = 1;

/** Ids a tenant is given, in each table: 2^36 (68.7 billion). */
export const TENANT_BLOCK = 2 ** 36;

/** The last tenant there can be: every block within JSON's safe integers. */
export const MAX_TENANT = Math.floor(Number.MAX_SAFE_INTEGER / TENANT_BLOCK);

/** The first id of a tenant's block and the first id past it. */
export function idRange(tenantId: number): { lo: number; hi: number } {
  return { lo: (tenantId - 1) * TENANT_BLOCK, hi: tenantId * TENANT_BLOCK };
}

/** The tenant an id was given to. */
export function tenantOfId(id: number): number {
  return Math.floor(id / TENANT_BLOCK) + 1;
}

/**
 * An id as the tenant may name it: itself when it is the tenant's, else -1, which names nothing
 * (every id is at least 0). Asked with another tenant's id, a request then does exactly what it
 * does with an id that does not exist: the same statements, the same answer, the same cost.
 */
export function ownId(tenantId: number, id: number): number {
  return tenantOfId(id) === tenantId ? id : -1;
}

/**
 * The tenant an API key names: `rk<tenant>_…` for a tenant of its own, else the default tenant
 * (every key issued before tenants, `rk_…`, and any token that is no key at all).
 */
export function tenantOfKey(token: string): number {
  const match = /^rk([1-9][0-9]{0,8})_/.exec(token);
  const tenant = match === null ? DEFAULT_TENANT : Number(match[1]);
  return tenant <= MAX_TENANT ? tenant : DEFAULT_TENANT;
}

/** The start of a key issued for a tenant: `rk_` for the default one (as before tenants), else `rk<tenant>_`. */
export function keyStart(tenantId: number): string {
  return tenantId === DEFAULT_TENANT ? 'rk_' : `rk${tenantId}_`;
}

/** A tenant's state as the operator sees it. */
export type TenantStatus = 'active' | 'moving' | 'deleting';

/** Where a tenant's requests go: its database (a D1 binding's name) while it is active. */
export interface TenantRoute {
  id: number;
  database: string;
  status: TenantStatus;
}
