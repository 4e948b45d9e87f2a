import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { DEFAULT_TENANT, keyStart, MAX_TENANT } from '../domain/tenant.ts';
import { parsePageQuery } from '../domain/list-query.ts';
import { derivedApiKey, isAdminToken, KEY_PREFIX_LENGTH, keyHashOf, sha256Hex } from '../http/auth.ts';
import { readJson } from '../http/body.ts';
import { followingWriteId } from '../core/ledger.ts';
import { cursorKey, readCursor, signCursor } from '../http/cursor.ts';
import {
  adminUnauthorized,
  forbidden,
  HttpError,
  invalidBody,
  invalidQuery,
  notFound,
  rejected,
} from '../http/errors.ts';
import { pathIds } from '../http/params.ts';
import { json } from '../http/respond.ts';
import { TenantInput } from '../schemas/admin.ts';
import { parseObject } from '../schemas/parse.ts';
import { AdminWrites, afterId } from '../storage/admin-writes.ts';
import { Files } from '../storage/files.ts';
import { Catalog, type TenantRow } from '../tenancy/catalog.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import { Meter } from '../storage/meter.ts';
import { databaseNamed, databaseNames, forgetRoute } from '../tenancy/routes.ts';
import { onPrimary } from '../storage/sessions.ts';
import { TenantData } from '../tenancy/tenant-data.ts';
import { adminWrite } from '../write/admin.ts';
import { keyHeader } from '../write/claim.ts';
import { TURN_TIMEOUT_MS } from '../write/deadlines.ts';

/**
 * The operator's API (the ADMIN_TOKEN secret; any API key is 403): tenants, each on a database of
 * the deployment, and the databases. The catalog of tenants is DB's.
 */

/** The operator's API takes the admin token alone: an API key is 403, any other token 401. */
export async function requireOperator(request: IRequest, context: Context): Promise<void> {
  if (await isAdminToken(request, context.env.ADMIN_TOKEN)) return;
  if ((await context.keys.holder(await keyHashOf(request))) === undefined) throw adminUnauthorized();
  throw forbidden('The operator API takes the ADMIN_TOKEN secret, not an API key.');
}

const catalogOf = ({ env, meter }: Context): Catalog => new Catalog(onPrimary(env.DB, meter), meter);

const tenantOut = ({ id, name, database, status, createdAt }: TenantRow) => ({ id, name, database, status, createdAt });

/** The size of each database, as D1 reports it after a statement. */
async function sizes(context: Context): Promise<Map<string, number>> {
  const names = databaseNames(context.env);
  const measured = await Promise.all(
    names.map(async (name) => {
      const db = databaseNamed(context.env, name);
      const result = db === undefined ? undefined : await context.meter.d1(() => db.prepare('SELECT 1').run());
      return [name, Number(result?.meta.size_after ?? 0)] as const;
    }),
  );
  return new Map(measured);
}

/** The database with the most room: the smallest, then the one with the fewest tenants, then by name. */
async function roomiest(context: Context): Promise<string> {
  const [bytes, counts] = await Promise.all([sizes(context), catalogOf(context).counts()]);
  const ranked = databaseNames(context.env).sort(
    (a, b) =>
      (bytes.get(a) ?? 0) - (bytes.get(b) ?? 0) || (counts.get(a) ?? 0) - (counts.get(b) ?? 0) || a.localeCompare(b),
  );
  return ranked[0] ?? 'DB';
}

/**
 * POST /tenants: a new tenant on a database, with its first user, an administrator, whose key the
 * answer shows once. The catalog's row and the administrator are two writes on two databases,
 * each exactly once: the second's id is the first's, so a retry (or a key's replay) finishes it
 * and shows the same key.
 */
export async function createTenant(request: IRequest, context: Context): Promise<Response> {
  await requireOperator(request, context);
  const key = keyHeader(request);
  const parsed = parseObject(TenantInput, await readJson(request));
  if (!parsed.ok || key.problems.length > 0)
    throw invalidBody([...(parsed.ok ? [] : parsed.problems), ...key.problems]);
  const input = parsed.value;
  if (input.database !== undefined && databaseNamed(context.env, input.database) === undefined)
    throw rejected([
      { pointer: '/database', code: 'unknown_database', message: `expected one of ${databaseNames(context.env)}` },
    ]);
  const database = input.database ?? (await roomiest(context));
  const secret = context.env.ADMIN_TOKEN ?? '';
  const hidden = '"adminKey":""';
  return adminWrite(context, key.key, input, {
    batch: (writes, writeId, now) =>
      writes.createTenant(
        writeId,
        catalogOf(context),
        input.name,
        database,
        afterId({ id: 0, name: input.name, database, status: 'active', createdAt: now, adminKey: '' }),
        now,
      ),
    failure: () => notFound('Tenant'),
    reveal: async (body, writeId) => {
      const tenant = JSON.parse(body) as { id: number; database: string; createdAt: number };
      if (tenant.id > MAX_TENANT) throw new HttpError(503, { code: 'unavailable', detail: 'No tenant ids are left.' });
      const adminKey = await firstAdministrator(
        context,
        tenant,
        followingWriteId(writeId, tenant.id, 'administrator'),
        secret,
      );
      return body.replace(hidden, `"adminKey":${JSON.stringify(adminKey)}`);
    },
  });
}

/** The tenant's first user and key, on its database, once for `writeId`: the key. */
async function firstAdministrator(
  context: Context,
  tenant: { id: number; database: string; createdAt: number },
  writeId: string,
  secret: string,
): Promise<string> {
  const db = databaseNamed(context.env, tenant.database);
  if (db === undefined) throw new Error(`tenant ${tenant.id} is on ${tenant.database}, which is no database here`);
  const apiKey = await derivedApiKey(secret, writeId, keyStart(tenant.id));
  const meter = new Meter();
  const writes = new AdminWrites(onPrimary(db, meter), meter, tenant.id);
  const now = tenant.createdAt;
  const batch = writes.firstAdministrator(writeId, await sha256Hex(apiKey), apiKey.slice(0, KEY_PREFIX_LENGTH), now);
  await context.meter.durable(async () => {
    await writes.commit(writeId, batch, undefined, now, Date.now() + TURN_TIMEOUT_MS);
    return { work: meter.work() };
  });
  return apiKey;
}

/** GET /tenants: every tenant not deleted, the default one first, keyset by id. */
export async function listTenants(request: IRequest, context: Context): Promise<Response> {
  await requireOperator(request, context);
  const query = parsePageQuery(new URL(request.url).searchParams);
  if (!query.ok) throw invalidQuery(query.problems);
  const secret = await cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
  const after =
    query.value.cursor === undefined ? 0 : await readCursor(secret, query.value.cursor, 'tenants', 'cursor');
  const rows = await catalogOf(context).list(after, query.value.limit + 1);
  const items = rows.slice(0, query.value.limit);
  const last = items.at(-1);
  const nextCursor =
    rows.length > query.value.limit && last !== undefined ? await signCursor(secret, last.id, 'tenants') : null;
  return json({ items: items.map(tenantOut), nextCursor });
}

/** GET /tenants/{tenantId}: 404 once it is deleted. */
export async function getTenant(request: IRequest, context: Context): Promise<Response> {
  await requireOperator(request, context);
  const { tenantId } = pathIds(request.params, 'tenantId');
  const tenant = await catalogOf(context).get(tenantId);
  const db = tenant === undefined ? undefined : databaseNamed(context.env, tenant.database);
  if (tenant === undefined) throw notFound('Tenant');
  const fileBytes =
    db === undefined ? 0 : await new Files(onPrimary(db, context.meter), context.meter).tenantBytes(tenantId);
  return json({ ...tenantOut(tenant), fileBytes });
}

/**
 * DELETE /tenants/{tenantId}: its keys stop at once (its database finds none of its callers and
 * refuses its writes), then its rows, import files and objects go in the background, and it is
 * 404. Deleting again answers the same. The default tenant cannot be deleted (409).
 */
export async function deleteTenant(request: IRequest, context: Context): Promise<Response> {
  await requireOperator(request, context);
  const { tenantId } = pathIds(request.params, 'tenantId');
  const key = keyHeader(request);
  if (key.problems.length > 0) throw invalidBody(key.problems);
  if (tenantId === DEFAULT_TENANT)
    throw new HttpError(409, { code: 'conflict', detail: 'The default tenant cannot be deleted.' });
  const catalog = catalogOf(context);
  const tenant = await catalog.get(tenantId);
  const db = tenant === undefined ? undefined : databaseNamed(context.env, tenant.database);
  if (tenant === undefined || db === undefined) throw notFound('Tenant');
  if (tenant.status === 'moving')
    throw new HttpError(409, { code: 'conflict', detail: 'The tenant is moving: cancel its move first.' });
  await new TenantData(onPrimary(db, context.meter), context.meter, tenantId).depart('deleted');
  await context.meter.d1(() => catalog.markDeleting(tenantId).run());
  forgetRoute(tenantId);
  await context.env.TENANTS.getByName(String(tenantId)).remove(tenantId, tenant.database);
  return json(tenantOut({ ...tenant, status: 'deleting' }), 202);
}

/** GET /databases: every database records are served from, its tenants and its size. */
export async function listDatabases(request: IRequest, context: Context): Promise<Response> {
  await requireOperator(request, context);
  const names = databaseNames(context.env);
  const [bytes, counts, fileBytes] = await Promise.all([
    sizes(context),
    catalogOf(context).counts(),
    Promise.all(
      names.map((name) => {
        const db = databaseNamed(context.env, name);
        return db === undefined ? 0 : new Files(onPrimary(db, context.meter), context.meter).databaseBytes();
      }),
    ),
  ]);
  return json({
    items: names.map((name, i) => ({
      name,
      tenants: counts.get(name) ?? 0,
      bytes: bytes.get(name) ?? 0,
      fileBytes: fileBytes[i] ?? 0,
    })),
  });
}
