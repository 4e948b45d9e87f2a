import { DEFAULT_TENANT, type TenantRoute } from '../domain/tenant.ts';
import type { Env } from '../env.ts';
import { isolateCache } from '../storage/isolate-cache.ts';

/**
 * Where each tenant lives, as this isolate remembers it: read from the catalog (DB's `tenants`),
 * then kept for 30 s or until a request finds it stale. A stale route costs no harm: a database a
 * tenant left refuses its writes (its triggers) and the request then asks the catalog again; its
 * reads are served there as before until the memory ends (a moved tenant's rows leave the old
 * database only after that). The default tenant is on DB until the catalog says
 * otherwise, so its requests never read the catalog.
 */

/** The databases records are served from (D1 bindings, by name); `DATABASES` lists them, else DB alone. */
export function databaseNames(env: Pick<Env, 'DATABASES'>): string[] {
  const names = (env.DATABASES ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  return names.length === 0 ? ['DB'] : [...new Set(['DB', ...names])];
}

/** A database by its binding's name; undefined for a name that is not one of the deployment's databases. */
export function databaseNamed(env: Env, name: string): D1Database | undefined {
  if (!databaseNames(env).includes(name)) return undefined;
  const binding = (env as unknown as Record<string, unknown>)[name];
  return typeof binding === 'object' && binding !== null && 'prepare' in binding ? (binding as D1Database) : undefined;
}

export const DEFAULT_ROUTE: TenantRoute = { id: DEFAULT_TENANT, database: 'DB', status: 'active' };

const known = new Map<number, { route: TenantRoute; until: number }>();
/** Tenants the catalog did not know, and until when that is believed (a tenant may be created meanwhile). */
const unknown = new Map<number, number>();
const KEPT = 10_000;
const UNKNOWN_MS = 1_000;
/** How long an isolate believes a tenant's route without reading the catalog again: 30 s unless a test build says. */
export function routeTtlMs(env: Pick<Env, 'ROUTE_TTL_MS'>): number {
  const ms = Number(env.ROUTE_TTL_MS);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : 30_000;
}

const CATALOG = "SELECT id, database, status FROM tenants WHERE id = ? AND status <> 'deleted'";

/**
 * The route of a tenant: remembered, else read from the catalog (`db`, the database holding it: one
 * round trip), then believed for `ttlMs`. Undefined for a tenant that does not exist or is deleted.
 */
export async function routeOf(
  db: D1Database,
  ttlMs: number,
  tenantId: number,
  fresh = false,
): Promise<TenantRoute | undefined> {
  if (!fresh) {
    const remembered = known.get(tenantId);
    if (remembered !== undefined && remembered.until > Date.now()) return remembered.route;
    if ((unknown.get(tenantId) ?? 0) > Date.now()) return undefined;
  }
  const row = await db.prepare(CATALOG).bind(tenantId).first<TenantRoute>();
  if (row === null && tenantId !== DEFAULT_TENANT) {
    if (unknown.size >= KEPT) unknown.clear();
    // A tenant gone: its route and every caller of it this isolate remembers are forgotten.
    forgetRoute(tenantId);
    unknown.set(tenantId, Date.now() + UNKNOWN_MS);
    return undefined;
  }
  // A tenant going: no caller of it this isolate remembers is believed.
  if (row === null || row.status === 'deleting') isolateCache.revokeTenant(tenantId);
  return remember(row ?? DEFAULT_ROUTE, ttlMs);
}

/** The default tenant's route needs no read while nothing says it moved. */
export function defaultRoute(): TenantRoute {
  return known.get(DEFAULT_TENANT)?.route ?? DEFAULT_ROUTE;
}

function remember(route: TenantRoute, ttlMs: number): TenantRoute {
  if (known.size >= KEPT) known.clear();
  known.set(route.id, { route, until: Date.now() + ttlMs });
  unknown.delete(route.id);
  return route;
}

/**
 * Forgets a tenant's route (it changed, or was found stale), and the callers of the tenant this
 * isolate remembers: the next request reads the catalog, and its key is looked up where the
 * tenant is now.
 */
export function forgetRoute(tenantId: number): void {
  known.delete(tenantId);
  unknown.delete(tenantId);
  isolateCache.revokeTenant(tenantId);
}

/**
 * The database of a tenant, for work done outside a request (an import, a webhook delivery, an
 * index build): undefined once the tenant is gone, and its work stops.
 */
export async function databaseFor(env: Env, tenantId: number): Promise<D1Database | undefined> {
  const route = tenantId === DEFAULT_TENANT ? defaultRoute() : await routeOf(env.DB, routeTtlMs(env), tenantId);
  return route === undefined || route.status === 'deleting' ? undefined : databaseNamed(env, route.database);
}
