import { DEFAULT_TENANT, tenantOfKey, type TenantRoute } from '../domain/tenant.ts';
import type { Env } from '../env.ts';
import { defaultRoute, routeOf, routeTtlMs } from '../tenancy/routes.ts';

const BEARER = /^Bearer[ ]+([\x21-\x7e]{1,512})$/i;

/**
 * The tenant a request's key names, and where it lives: the default tenant for a key of its own
 * (and for any request without a key, which the routes that need one refuse). A key naming a
 * tenant that does not exist, or is being deleted, goes to the default tenant's database, where
 * it finds no caller: 401, as any unknown key.
 */
export async function tenantOfRequest(request: Request, env: Env): Promise<TenantRoute> {
  const token = BEARER.exec(request.headers.get('Authorization') ?? '')?.[1];
  const tenantId = token === undefined ? DEFAULT_TENANT : tenantOfKey(token);
  if (tenantId === DEFAULT_TENANT) return defaultRoute();
  const route = await routeOf(env.DB, routeTtlMs(env), tenantId);
  return route === undefined || route.status === 'deleting' ? defaultRoute() : route;
}
