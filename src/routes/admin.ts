import { templateFields } from '../domain/name.ts';
import { duplicateValues, isUniqueViolation } from '../storage/record-index.ts';
import { hiddenInputProblems } from '../domain/formula-access.ts';
import { startIndexBuild } from '../push/index-builds.ts';
import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import {
  definitionOut,
  definitionProblems,
  referenceChanges,
  formulaProblems,
  lookupNames,
  readByRollups,
  rollupProblems,
  lookupProblems,
  reservedNames,
  type ObjectDef,
} from '../domain/definition.ts';
import {
  adminDisabled,
  derivedApiKey,
  hasAdminToken,
  isAdminToken,
  KEY_PREFIX_LENGTH,
  keyHashOf,
  sha256Hex,
} from '../http/auth.ts';
import { parsePageQuery } from '../domain/list-query.ts';
import { readJson } from '../http/body.ts';
import { cursorKey, readCursor, signCursor } from '../http/cursor.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import {
  adminUnauthorized,
  forbidden,
  HttpError,
  invalidBody,
  invalidQuery,
  notFound,
  rejected,
  type InputProblem,
} from '../http/errors.ts';
import { keyStart, ownId } from '../domain/tenant.ts';
import type { Role } from '../domain/access.ts';
import type * as v from 'valibot';
import { pathIds } from '../http/params.ts';
import { json } from '../http/respond.ts';
import {
  MembershipInput,
  NamedInput,
  ObjectDefinitionInput,
  UserInput,
  type ObjectDefinitionIn,
} from '../schemas/admin.ts';
import { parseObject, pointer, type Parsed } from '../schemas/parse.ts';
import { keyHeader, type KeyHeader } from '../write/claim.ts';
import { AdminStore, type Member, type Named } from '../storage/admin.ts';
import { afterId, type DefinitionColumns } from '../storage/admin-writes.ts';
import { toObjectDef } from '../storage/store.ts';
import { adminWrite } from '../write/admin.ts';
import { isolateCache } from '../storage/isolate-cache.ts';
import { revokedHere } from '../storage/sessions.ts';

/**
 * The admin API: users, keys, workspaces, memberships and object definitions. Every handler
 * checks the admin token first, so a caller without it learns nothing else about the request.
 */

export const adminStore = ({ primary, meter, tenant }: Context): AdminStore =>
  new AdminStore(primary, meter, tenant.id);

/**
 * Who may call the admin API: the admin token (the operator, for the default tenant, as before
 * tenants), or the key of an administrator of the key's tenant, for that tenant alone, whether or
 * not an admin token is configured. Another key is 403; no key, or one that is none, 401; without
 * an admin token configured, anything but an administrator's key is 503 (the admin API is off).
 */
export async function requireAdmin(request: IRequest, context: Context): Promise<void> {
  const token = context.env.ADMIN_TOKEN;
  if (hasAdminToken(token) && (await isAdminToken(request, token))) {
    context.admin = { userId: undefined };
    return;
  }
  const hash = await keyHashOf(request).catch((error: unknown) => {
    throw hasAdminToken(token) ? error : adminDisabled();
  });
  const holder = await context.keys.holder(hash);
  if (!hasAdminToken(token) && holder?.admin !== true) throw adminDisabled();
  if (holder === undefined) throw adminUnauthorized();
  if (!holder.admin) throw forbidden("The admin API takes the ADMIN_TOKEN secret or a tenant administrator's key.");
  context.admin = { userId: holder.userId };
}

/** A path's id as the caller's tenant may name it (another tenant's is no id: as one that does not exist). */
export const own = (context: Context, id: number): number => ownId(context.tenant.id, id);

/** The parsed body, or one 400 listing every problem of the body and of the Idempotency-Key header. */
export function valid<T>(parsed: Parsed<T>, key: KeyHeader): T {
  if (!parsed.ok || key.problems.length > 0)
    throw invalidBody([...(parsed.ok ? [] : parsed.problems), ...key.problems]);
  return parsed.value;
}

/** A write without a body: 400 when its Idempotency-Key header is malformed. */
export function noBodyProblems(key: KeyHeader): void {
  if (key.problems.length > 0) throw invalidBody(key.problems);
}

export async function createUser(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const key = keyHeader(request);
  const input = valid(parseObject(UserInput, await readJson(request)), key);
  return adminWrite(context, key.key, input, {
    batch: (writes, writeId, now) => writes.createUser(writeId, input.name, now, input.admin === true),
    failure: () => notFound('User'),
  });
}

/**
 * A keyset page of an admin list: the items after the cursor's position (an id), and a cursor
 * signed for `scope` when more follow. `read` fetches up to `limit` items after a position;
 * undefined means the list's owner (a workspace) does not exist.
 */
export async function page<T>(
  request: IRequest,
  context: Context,
  scope: string,
  idOf: (item: T) => number,
  read: (after: number, limit: number) => Promise<T[] | undefined>,
  { missing = 'Resource', show = (item: T): unknown => item }: { missing?: string; show?: (item: T) => unknown } = {},
): Promise<Response> {
  const query = parsePageQuery(new URL(request.url).searchParams);
  if (!query.ok) throw invalidQuery(query.problems);
  const secret = await cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
  const after = query.value.cursor === undefined ? 0 : await readCursor(secret, query.value.cursor, scope, 'cursor');
  const fetched = await read(after, query.value.limit + 1);
  if (fetched === undefined) throw notFound(missing);
  const items = fetched.slice(0, query.value.limit);
  const last = items.at(-1);
  const nextCursor =
    fetched.length > query.value.limit && last !== undefined ? await signCursor(secret, idOf(last), scope) : null;
  return json({ items: items.map(show), nextCursor });
}

/**
 * What a committed revocation takes away (keys, a user's memberships or role) is forgotten at
 * once by this isolate's memory, and its reads start no earlier than the revocation's bookmark,
 * so neither a read in flight nor a lagging replica puts it back here.
 */
export function revokedNow(context: Context, keyHashes: readonly string[], userId?: number): void {
  for (const keyHash of keyHashes) isolateCache.revokeKey(keyHash);
  if (userId !== undefined) isolateCache.revokeUser(userId);
  revokedHere(context.meter.newestBookmark());
}

/** The key hashes a revoking write's first statement returned (none when this attempt did not commit it). */
const keyHashesOf = (effects: D1Result[] | undefined): string[] =>
  ((effects?.[0]?.results ?? []) as { key_hash: string }[]).map((row) => row.key_hash);

export async function listUsers(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const store = adminStore(context);
  return page(
    request,
    context,
    'admin/users',
    (user: Named) => user.id,
    (after, limit) => store.listUsers(after, limit),
  );
}

/**
 * Deletes a user with their keys and memberships at once: their keys answer 401 at once in
 * this isolate (its memory forgets them), within the memory's 30 s in every other isolate.
 */
export async function deleteUser(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const userId = own(context, pathIds(request.params, 'userId').userId);
  const key = keyHeader(request);
  noBodyProblems(key);
  return adminWrite(context, key.key, null, {
    batch: (writes, writeId) => writes.deleteUser(writeId, userId),
    failure: () => notFound('User'),
    done: (effects) => revokedNow(context, keyHashesOf(effects), userId),
  });
}

/**
 * The secret keys are derived under: the admin token, else (a tenant administrator issuing keys
 * while none is configured) the service's own secret, CURSOR_SECRET or the random one kept in D1.
 * Never an empty text: a key derived under one would be anyone's to compute from the ledger.
 */
async function keySecret(context: Context): Promise<string> {
  const token = context.env.ADMIN_TOKEN;
  if (hasAdminToken(token)) return token;
  return cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
}

/**
 * Issues a key for a user. The key is derived from the write's id under a secret (see keySecret),
 * so the ledger keeps the answer without it and a retry or replay shows the same key; only its
 * hash is stored. A replay after that secret changed shows a key that does not work.
 */
export async function createKey(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const secret = await keySecret(context);
  const userId = own(context, pathIds(request.params, 'userId').userId);
  const key = keyHeader(request);
  noBodyProblems(key);
  const hidden = '"key":""';
  const start = keyStart(context.tenant.id);
  return adminWrite(context, key.key, null, {
    batch: async (writes, writeId, now) => {
      const apiKey = await derivedApiKey(secret, writeId, start);
      const prefix = apiKey.slice(0, KEY_PREFIX_LENGTH);
      const rest = afterId({ id: 0, key: '', prefix, createdAt: now });
      return writes.createKey(writeId, userId, await sha256Hex(apiKey), prefix, rest, now);
    },
    failure: () => notFound('User'),
    reveal: async (body, writeId) =>
      body.replace(hidden, `"key":${JSON.stringify(await derivedApiKey(secret, writeId, start))}`),
  });
}

export async function listKeys(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const userId = own(context, pathIds(request.params, 'userId').userId);
  const list = await context.keys.list(userId);
  if (list === undefined) throw notFound('User');
  return json(list);
}

/**
 * Revokes a key: 401 at once in this isolate (its memory forgets the key, and a read of it still
 * in flight cannot put it back), within the memory's 30 s in every other isolate.
 */
export async function revokeKey(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const keyId = own(context, pathIds(request.params, 'keyId').keyId);
  const key = keyHeader(request);
  noBodyProblems(key);
  return adminWrite(context, key.key, null, {
    batch: (writes, writeId) => writes.revokeKey(writeId, keyId),
    failure: () => notFound('Key'),
    done: (effects) => revokedNow(context, keyHashesOf(effects)),
  });
}

export async function createWorkspace(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const key = keyHeader(request);
  const { name } = valid(parseObject(NamedInput, await readJson(request)), key);
  return adminWrite(
    context,
    key.key,
    { name },
    {
      batch: (writes, writeId, now) => writes.createWorkspace(writeId, name, now),
      failure: () => notFound('Workspace'),
    },
  );
}

export async function listWorkspaces(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const store = adminStore(context);
  return page(
    request,
    context,
    'admin/workspaces',
    (workspace: Named) => workspace.id,
    (after, limit) => store.listWorkspaces(after, limit),
  );
}

/**
 * Deletes a workspace with its memberships: 409 while the current version of an object
 * definition lists it or a record is shared with it (records are never deleted, so a record
 * shared with it keeps it for good), naming what keeps it.
 */
export async function deleteWorkspace(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const workspaceId = own(context, pathIds(request.params, 'workspaceId').workspaceId);
  const key = keyHeader(request);
  noBodyProblems(key);
  return adminWrite(context, key.key, null, {
    batch: (writes, writeId) => writes.deleteWorkspace(writeId, workspaceId),
    failure: async (status, writes) => {
      if (status !== 409) return notFound('Workspace');
      const inUse = await writes.workspaceInUse(workspaceId);
      const problems: InputProblem[] = inUse.objectIds.map((id) => ({
        parameter: 'workspaceId',
        code: 'workspace_in_use',
        message: `object definition ${id} lists this workspace`,
      }));
      if (inUse.hasRecords)
        problems.push({
          parameter: 'workspaceId',
          code: 'workspace_in_use',
          message: 'records are shared with this workspace',
        });
      return new HttpError(409, {
        code: 'conflict',
        title: 'Workspace in use',
        detail: 'An object definition lists this workspace, or records are shared with it.',
        errors: problems,
      });
    },
  });
}

export async function putMember(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const ids = pathIds(request.params, 'workspaceId', 'userId');
  const [workspaceId, userId] = [own(context, ids.workspaceId), own(context, ids.userId)];
  const key = keyHeader(request);
  const input = valid(parseObject(MembershipInput, await readJson(request)), key);
  const grant = grantOf(input);
  return adminWrite(context, key.key, input, {
    batch: (writes, writeId) =>
      writes.putMember(
        writeId,
        workspaceId,
        userId,
        'roleId' in grant ? { roleId: own(context, grant.roleId) } : grant,
      ),
    failure: (status) =>
      status === 422
        ? rejected([{ pointer: '/roleId', code: 'unknown_role', message: 'no such role' }])
        : notFound('Workspace or user'),
    // A changed role may take rights away: this isolate reads the user's rights afresh.
    done: () => revokedNow(context, [], userId),
  });
}

/** A membership's role: built in or defined, exactly one of them (400 otherwise). */
function grantOf(input: v.InferOutput<typeof MembershipInput>): { role: Role } | { roleId: number } {
  if (input.role !== undefined && input.roleId === undefined) return { role: input.role };
  if (input.roleId !== undefined && input.role === undefined) return { roleId: input.roleId };
  const both = input.role !== undefined;
  throw invalidBody([
    {
      pointer: both ? '/roleId' : '',
      code: both ? 'not_allowed' : 'required',
      message: both ? 'give role or roleId, not both' : 'give role (viewer or editor) or roleId',
    },
  ]);
}

export async function deleteMember(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const ids = pathIds(request.params, 'workspaceId', 'userId');
  const [workspaceId, userId] = [own(context, ids.workspaceId), own(context, ids.userId)];
  const key = keyHeader(request);
  noBodyProblems(key);
  return adminWrite(context, key.key, null, {
    batch: (writes, writeId) => writes.deleteMember(writeId, workspaceId, userId),
    failure: () => notFound('Workspace or user'),
    // Removed at once in this isolate; a read still in flight cannot put the membership back.
    done: () => revokedNow(context, [], userId),
  });
}

export async function listMembers(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const workspaceId = own(context, pathIds(request.params, 'workspaceId').workspaceId);
  const store = adminStore(context);
  const scope = `admin/workspaces/${workspaceId}/members`;
  return page(
    request,
    context,
    scope,
    (member: Member) => member.userId,
    (after, limit) => store.listMembers(workspaceId, after, limit),
    {
      missing: 'Workspace',
    },
  );
}

/**
 * A valid definition whose workspaces and reference targets all exist, or 400 / 422. `objectId`:
 * the object it replaces, whose reference fields keep their targets.
 */
async function definitionBody(
  request: IRequest,
  context: Context,
  key: KeyHeader,
  objectId?: number,
): Promise<ObjectDefinitionIn> {
  const input = valid(parseObject(ObjectDefinitionInput, await readJson(request)), key);
  const shape = definitionProblems(input);
  if (shape.length > 0) throw invalidBody(shape);
  const targets = input.fields.flatMap((field) => [
    ...(field.target === undefined ? [] : [own(context, field.target)]),
    ...(field.from === undefined ? [] : [own(context, field.from.objectId)]),
  ]);
  const [existing, objects, history, hidden, readers] = await Promise.all([
    adminStore(context).existingWorkspaces(input.workspaceIds.map((id) => own(context, id))),
    adminStore(context).objects(targets),
    objectId === undefined ? [] : adminStore(context).fieldHistory(objectId),
    objectId === undefined ? [] : adminStore(context).hiddenFields(objectId),
    objectId === undefined ? [] : adminStore(context).rollupReaders(objectId),
  ]);
  // A role that hides a field keeps it out of the name, which every member sees, and out of a
  // formula that role shows.
  const anyHides = new Set(hidden.flatMap((fields) => [...fields]));
  const shown = templateFields(input.nameTemplate ?? '').flatMap((name) =>
    anyHides.has(name)
      ? [{ pointer: '/nameTemplate', code: 'hidden_field', message: `a role hides ${name}`, status: 422 }]
      : [],
  );
  const unknownTargets = input.fields.flatMap((field, i) =>
    field.target === undefined || objects.has(field.target) || field.target === objectId
      ? []
      : [
          {
            pointer: pointer('', 'fields', i, 'target'),
            code: 'unknown_object',
            message: 'no such object',
            status: 422,
          },
        ],
  );
  const changed = referenceChanges(history, input);
  const missing = input.workspaceIds.flatMap((id, i) =>
    existing.has(id)
      ? []
      : [
          {
            pointer: pointer('', 'workspaceIds', i),
            code: 'unknown_workspace',
            message: 'no such workspace',
            status: 422,
          },
        ],
  );
  const reserved = reservedNames(history.at(-1) ?? [], input);
  const targetFields = new Map([...objects].map(([id, def]) => [id, def.fields]));
  if (objectId !== undefined) targetFields.set(objectId, input.fields);
  const formulas = [
    ...formulaProblems(input),
    ...hiddenInputProblems(input.fields, hidden),
    ...lookupProblems(input, targetFields),
    ...lookupNames(history, input),
    ...rollupProblems(input, targetFields, objectId),
    ...readByRollups(readers, input),
  ];
  const problems = [...missing, ...unknownTargets, ...changed, ...reserved, ...formulas, ...shown];
  if (problems.length > 0) throw rejected(problems);
  return input;
}

/** A definition as its version's columns store it, and as the admin API answers it (with `id` and `version`). */
function definitionColumns(
  input: ObjectDefinitionIn,
  id: number,
  version: number,
): { columns: DefinitionColumns; out: Record<string, unknown> } {
  const columns: DefinitionColumns = {
    name: input.name,
    nameTemplate: input.nameTemplate ?? null,
    fields: JSON.stringify(input.fields),
    workspaceIds: JSON.stringify([...new Set(input.workspaceIds)].sort((a, b) => a - b)),
  };
  const out = definitionOut(
    toObjectDef({
      id,
      version,
      name: columns.name,
      name_template: columns.nameTemplate,
      fields: columns.fields,
      workspace_ids: columns.workspaceIds,
    }),
  );
  return { columns, out };
}

export async function createObject(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const key = keyHeader(request);
  const input = await definitionBody(request, context, key);
  const { columns, out } = definitionColumns(input, 0, 1);
  return adminWrite(context, key.key, input, {
    batch: (writes, writeId, now) => writes.createObject(writeId, columns, afterId(out), now),
    failure: () => notFound('Object'),
  });
}

export async function updateObject(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const objectId = own(context, pathIds(request.params, 'objectId').objectId);
  const key = keyHeader(request);
  const input = await definitionBody(request, context, key, objectId);
  const { columns, out } = definitionColumns(input, objectId, 0);
  // The new version is known only in SQL: the answer is completed around it.
  const text = JSON.stringify(out);
  const opening = `{"id":${objectId},"version":`;
  if (!text.startsWith(`${opening}0,`)) throw new Error('a definition answers its id and version first');
  const around = { opening, rest: text.slice(opening.length + 1) };
  return adminWrite(context, key.key, input, {
    batch: (writes, writeId, now) => writes.updateObject(writeId, objectId, columns, around, now),
    failure: () => notFound('Object'),
    // A field newly indexed is built after the answer, in chunks. Should this call be lost, the
    // scheduled run starts the build.
    // This isolate's writes use the new definition at once (others within the memory's 30 s).
    done: (effects) => {
      if (effects === undefined) return undefined;
      isolateCache.forgetObject(objectId);
      return startIndexBuild(context.env, objectId).catch((error: unknown) => {
        console.error(JSON.stringify({ message: 'index build not started', objectId, error: String(error) }));
      });
    },
  }).catch(async (error: unknown) => {
    // A field made unique while live records share a value: nothing was written; say which.
    if (!isUniqueViolation(error)) throw error;
    const duplicates = await duplicateValues(context.db, objectId, input.fields);
    throw rejected(
      duplicates.map(({ fieldIndex, recordIds }) => ({
        pointer: pointer('', 'fields', fieldIndex, 'unique'),
        code: 'duplicates',
        message: `live records ${recordIds.join(', ')} hold the same value`,
        status: 409,
      })),
    );
  });
}

export async function listObjects(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const store = adminStore(context);
  return page(
    request,
    context,
    'admin/objects',
    (def: ObjectDef) => def.id,
    (after, limit) => store.listObjects(after, limit),
    { show: definitionOut },
  );
}

export async function getObjectVersion(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const { objectId, version } = pathIds(request.params, 'objectId', 'version');
  const def = await adminStore(context).getObjectVersion(own(context, objectId), version);
  if (def === undefined) throw notFound('Object version');
  return json(definitionOut(def));
}

export async function getObject(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const { objectId } = pathIds(request.params, 'objectId');
  const id = own(context, objectId);
  const [def, computed] = await Promise.all([adminStore(context).getObject(id), adminStore(context).computing(id)]);
  if (def === undefined) throw notFound('Object');
  const done = Object.entries(computed).map(([what, after]) => [what, { afterRecordId: after }]);
  const computing = done.length === 0 ? {} : { computing: Object.fromEntries(done) };
  return json({ ...definitionOut(def), ...computing });
}
