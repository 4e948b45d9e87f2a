import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { definitionOut, definitionProblems, type ObjectDef } from '../domain/definition.ts';
import { KEY_PREFIX_LENGTH, newApiKey, requireAdmin, sha256Hex } from '../http/auth.ts';
import { parsePageQuery } from '../domain/list-query.ts';
import { readJson } from '../http/body.ts';
import { cursorKey, readCursor, signCursor } from '../http/cursor.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import { HttpError, invalidBody, invalidQuery, notFound, rejected, type InputProblem } from '../http/errors.ts';
import { pathIds } from '../http/params.ts';
import { json } from '../http/respond.ts';
import { MembershipInput, NamedInput, ObjectDefinitionInput, type ObjectDefinitionIn } from '../schemas/admin.ts';
import { parseObject, pointer, type Parsed } from '../schemas/parse.ts';
import { AdminStore, type Member, type Named } from '../storage/admin.ts';
import { isolateCache } from '../storage/isolate-cache.ts';
import { revokedHere } from '../storage/sessions.ts';

/**
 * The admin API: users, keys, workspaces, memberships and object definitions. Every handler
 * checks the admin token first, so a caller without it learns nothing else about the request.
 */

const adminStore = ({ primary, meter }: Context): AdminStore => new AdminStore(primary, meter);

function valid<T>(parsed: Parsed<T>): T {
  if (!parsed.ok) throw invalidBody(parsed.problems);
  return parsed.value;
}

export async function createUser(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { name } = valid(parseObject(NamedInput, await readJson(request)));
  return json(await adminStore(context).createUser(name, Date.now()), 201);
}

/**
 * A keyset page of an admin list: the items after the cursor's position (an id), and a cursor
 * signed for `scope` when more follow. `read` fetches up to `limit` items after a position;
 * undefined means the list's owner (a workspace) does not exist.
 */
async function page<T>(
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

export async function listUsers(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
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
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { userId } = pathIds(request.params, 'userId');
  const deleted = await adminStore(context).deleteUser(userId);
  if (deleted === undefined) throw notFound('User');
  for (const hash of deleted.keyHashes) isolateCache.revokeKey(hash);
  isolateCache.revokeUser(userId);
  revokedHere(context.meter.newestBookmark());
  return new Response(null, { status: 204 });
}

export async function createKey(request: IRequest, { env, keys }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { userId } = pathIds(request.params, 'userId');
  const key = newApiKey();
  const info = await keys.create(userId, await sha256Hex(key), key.slice(0, KEY_PREFIX_LENGTH), Date.now());
  if (info === undefined) throw notFound('User');
  return json({ id: info.id, key, prefix: info.prefix, createdAt: info.createdAt }, 201);
}

export async function listKeys(request: IRequest, { env, keys }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { userId } = pathIds(request.params, 'userId');
  const list = await keys.list(userId);
  if (list === undefined) throw notFound('User');
  return json(list);
}

/**
 * Revokes a key: 401 at once in this isolate (its memory forgets the key, and a read of it still
 * in flight cannot put it back), within the memory's 30 s in every other isolate.
 */
export async function revokeKey(request: IRequest, { env, keys, meter }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { keyId } = pathIds(request.params, 'keyId');
  const keyHash = await keys.revoke(keyId);
  if (keyHash === undefined) throw notFound('Key');
  isolateCache.revokeKey(keyHash);
  revokedHere(meter.newestBookmark());
  return new Response(null, { status: 204 });
}

export async function createWorkspace(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { name } = valid(parseObject(NamedInput, await readJson(request)));
  return json(await adminStore(context).createWorkspace(name, Date.now()), 201);
}

export async function listWorkspaces(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
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
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { workspaceId } = pathIds(request.params, 'workspaceId');
  const outcome = await adminStore(context).deleteWorkspace(workspaceId);
  if (outcome.deleted) return new Response(null, { status: 204 });
  if (!outcome.exists) throw notFound('Workspace');
  const problems: InputProblem[] = outcome.inUse.objectIds.map((id) => ({
    parameter: 'workspaceId',
    code: 'workspace_in_use',
    message: `object definition ${id} lists this workspace`,
  }));
  if (outcome.inUse.hasRecords)
    problems.push({
      parameter: 'workspaceId',
      code: 'workspace_in_use',
      message: 'records are shared with this workspace',
    });
  throw new HttpError(
    409,
    'conflict',
    'Workspace in use',
    'An object definition lists this workspace, or records are shared with it.',
    problems,
  );
}

export async function putMember(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { workspaceId, userId } = pathIds(request.params, 'workspaceId', 'userId');
  const { role } = valid(parseObject(MembershipInput, await readJson(request)));
  if (!(await adminStore(context).putMember(workspaceId, userId, role))) throw notFound('Workspace or user');
  // A changed role may take rights away: this isolate reads the user's rights afresh.
  isolateCache.revokeUser(userId);
  revokedHere(context.meter.newestBookmark());
  return json({ workspaceId, userId, role });
}

export async function deleteMember(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { workspaceId, userId } = pathIds(request.params, 'workspaceId', 'userId');
  if (!(await adminStore(context).deleteMember(workspaceId, userId))) throw notFound('Workspace or user');
  // Removed at once in this isolate; a read still in flight cannot put the membership back.
  isolateCache.revokeUser(userId);
  revokedHere(context.meter.newestBookmark());
  return new Response(null, { status: 204 });
}

export async function listMembers(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { workspaceId } = pathIds(request.params, 'workspaceId');
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

/** A valid definition whose workspaces all exist, or 400 / 422. */
async function definitionBody(request: IRequest, context: Context): Promise<ObjectDefinitionIn> {
  const input = valid(parseObject(ObjectDefinitionInput, await readJson(request)));
  const shape = definitionProblems(input);
  if (shape.length > 0) throw invalidBody(shape);
  const existing = await adminStore(context).existingWorkspaces(input.workspaceIds);
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
  if (missing.length > 0) throw rejected(missing);
  return input;
}

export async function createObject(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const input = await definitionBody(request, context);
  return json(definitionOut(await adminStore(context).createObject(input, Date.now())), 201);
}

export async function updateObject(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { objectId } = pathIds(request.params, 'objectId');
  const input = await definitionBody(request, context);
  const def = await adminStore(context).updateObject(objectId, input, Date.now());
  if (def === undefined) throw notFound('Object');
  return json(definitionOut(def));
}

export async function listObjects(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
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
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { objectId, version } = pathIds(request.params, 'objectId', 'version');
  const def = await adminStore(context).getObjectVersion(objectId, version);
  if (def === undefined) throw notFound('Object version');
  return json(definitionOut(def));
}

export async function getObject(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { objectId } = pathIds(request.params, 'objectId');
  const def = await adminStore(context).getObject(objectId);
  if (def === undefined) throw notFound('Object');
  return json(definitionOut(def));
}
