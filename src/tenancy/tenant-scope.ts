import { idRange } from '../domain/tenant.ts';

/**
 * The rule of tenancy for every read a request makes: a request is routed to one tenant, and no
 * row outside that tenant's block of ids is read for it, whatever state any database is in (a
 * moved tenant's rows still waiting on its old database, a cancelled move's partial copy, a
 * deleted tenant's rows not yet removed). The caller behind a key, the records and the object
 * definitions a request names are all looked up through these conditions, so a key of another
 * tenant finds no caller, and another tenant's id reads no row: it costs what a missing id costs.
 */

/** The scope of work done for no request (a database's upkeep): it finds no caller (its block holds no user). */
export const NO_TENANT = 0;

/** SQL: `column` holds an id of `tenant`'s block (integer literals, never bound values). */
export function inTenant(column: string, tenant: number): string {
  const { lo, hi } = idRange(tenant);
  return `(${column} >= ${lo} AND ${column} < ${hi})`;
}

/**
 * SQL: the ids of the JSON array bound to `param`, each of another tenant's block as -1, which
 * names nothing: it is looked up as a missing id is, at the same cost, and finds no row.
 */
export function tenantIds(param: string, tenant: number): string {
  return `SELECT iif(${inTenant('value', tenant)}, value, -1) FROM json_each(${param})`;
}
