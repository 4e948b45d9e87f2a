import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { definitionOut, definitionProblems } from '../domain/definition.ts';
import { KEY_PREFIX_LENGTH, newApiKey, requireAdmin, sha256Hex } from '../http/auth.ts';
import { isolateCache } from '../storage/isolate-cache.ts';
import { readJson } from '../http/body.ts';
import { invalidBody, notFound, rejected } from '../http/errors.ts';
import { pathIds } from '../http/params.ts';
import { json } from '../http/respond.ts';
import { MembershipInput, NamedInput, ObjectDefinitionInput, type ObjectDefinitionIn } from '../schemas/admin.ts';
import { parseObject, pointer, type Parsed } from '../schemas/parse.ts';

/** CONTRACT §4: the admin API. Every handler first checks the admin token. */

function valid<T>(parsed: Parsed<T>): T {
  if (!parsed.ok) throw invalidBody(parsed.problems);
  return parsed.value;
}

export async function createUser(request: IRequest, { env, store }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { name } = valid(parseObject(NamedInput, await readJson(request)));
  return json(await store.createUser(name, Date.now()), 201);
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
export async function revokeKey(request: IRequest, { env, keys }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { keyId } = pathIds(request.params, 'keyId');
  const keyHash = await keys.revoke(keyId);
  if (keyHash === undefined) throw notFound('Key');
  isolateCache.revokeKey(keyHash);
  return new Response(null, { status: 204 });
}

export async function createWorkspace(request: IRequest, { env, store }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { name } = valid(parseObject(NamedInput, await readJson(request)));
  return json(await store.createWorkspace(name, Date.now()), 201);
}

export async function putMember(request: IRequest, { env, store }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { workspaceId, userId } = pathIds(request.params, 'workspaceId', 'userId');
  const { role } = valid(parseObject(MembershipInput, await readJson(request)));
  if (!(await store.putMember(workspaceId, userId, role))) throw notFound('Workspace or user');
  // A changed role may take rights away: this isolate reads the user's rights afresh.
  isolateCache.revokeUser(userId);
  return json({ workspaceId, userId, role });
}

export async function deleteMember(request: IRequest, { env, store }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { workspaceId, userId } = pathIds(request.params, 'workspaceId', 'userId');
  if (!(await store.deleteMember(workspaceId, userId))) throw notFound('Workspace or user');
  // Removed at once in this isolate; a read still in flight cannot put the membership back.
  isolateCache.revokeUser(userId);
  return new Response(null, { status: 204 });
}

/** A valid definition whose workspaces all exist, or 400 / 422. */
async function definitionBody(request: IRequest, { store }: Context): Promise<ObjectDefinitionIn> {
  const input = valid(parseObject(ObjectDefinitionInput, await readJson(request)));
  const shape = definitionProblems(input);
  if (shape.length > 0) throw invalidBody(shape);
  const existing = await store.existingWorkspaces(input.workspaceIds);
  const missing = input.workspaceIds.flatMap((id, i) =>
    existing.has(id) ? [] : [{ pointer: pointer('', 'workspaceIds', i), code: 'unknown_workspace', message: 'no such workspace', status: 422 }],
  );
  if (missing.length > 0) throw rejected(missing);
  return input;
}

export async function createObject(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const input = await definitionBody(request, context);
  return json(definitionOut(await context.store.createObject(input, Date.now())), 201);
}

export async function updateObject(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context.env.ADMIN_TOKEN);
  const { objectId } = pathIds(request.params, 'objectId');
  const input = await definitionBody(request, context);
  const def = await context.store.updateObject(objectId, input, Date.now());
  if (def === undefined) throw notFound('Object');
  return json(definitionOut(def));
}

export async function getObjectVersion(request: IRequest, { env, store }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { objectId, version } = pathIds(request.params, 'objectId', 'version');
  const def = await store.getObjectVersion(objectId, version);
  if (def === undefined) throw notFound('Object version');
  return json(definitionOut(def));
}

export async function getObject(request: IRequest, { env, store }: Context): Promise<Response> {
  await requireAdmin(request, env.ADMIN_TOKEN);
  const { objectId } = pathIds(request.params, 'objectId');
  const def = await store.getObject(objectId);
  if (def === undefined) throw notFound('Object');
  return json(definitionOut(def));
}

