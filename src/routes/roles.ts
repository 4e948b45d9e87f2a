import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { roleRules } from '../domain/roles.ts';
import { readJson } from '../http/body.ts';
import { HttpError, notFound, rejected } from '../http/errors.ts';
import { pathIds } from '../http/params.ts';
import { json } from '../http/respond.ts';
import { RoleInput } from '../schemas/admin.ts';
import { parseObject } from '../schemas/parse.ts';
import type { RoleOut } from '../storage/admin.ts';
import { isolateCache } from '../storage/isolate-cache.ts';
import { revokedHere } from '../storage/sessions.ts';
import { keyHeader, type KeyHeader } from '../write/claim.ts';
import { adminWrite } from '../write/admin.ts';
import { adminStore, noBodyProblems, own, page, requireAdmin, valid } from './admin.ts';

/**
 * Roles a tenant's administrator defines beside `viewer` and `editor`. A role's rules are checked
 * against the current definitions of the objects it names; a change or a deletion is taken at once
 * by this isolate (its callers holding the role are read afresh), within 30 s by every other.
 */

const nameTaken = (): HttpError =>
  rejected([{ pointer: '/name', code: 'name_taken', message: 'the tenant has a role of this name' }]);

/** A valid role whose objects and fields exist, or 400 / 422 listing every problem. */
async function roleBody(request: IRequest, context: Context, key: KeyHeader) {
  const input = valid(parseObject(RoleInput, await readJson(request)), key);
  const objects = input.objects.map((rule) => ({ ...rule, objectId: own(context, rule.objectId) }));
  const defs = await adminStore(context).objects(objects.map((rule) => rule.objectId));
  const checked = roleRules(objects, defs);
  if (!checked.ok) throw rejected(checked.problems);
  return { input, rules: checked.rules };
}

/** What a committed change of a role takes away is forgotten here at once. */
function roleChanged(context: Context, roleId: number): void {
  isolateCache.revokeRole(roleId);
  revokedHere(context.meter.newestBookmark());
}

export async function createRole(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const key = keyHeader(request);
  const { input, rules } = await roleBody(request, context, key);
  return adminWrite(context, key.key, input, {
    batch: (writes, writeId, now) => writes.createRole(writeId, input.name, rules, now),
    failure: (status) => (status === 409 ? nameTaken() : notFound('Role')),
  });
}

export async function updateRole(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const roleId = own(context, pathIds(request.params, 'roleId').roleId);
  const key = keyHeader(request);
  const { input, rules } = await roleBody(request, context, key);
  return adminWrite(context, key.key, input, {
    batch: (writes, writeId, now) => writes.updateRole(writeId, roleId, input.name, rules, now),
    failure: (status) => (status === 409 ? nameTaken() : notFound('Role')),
    done: () => roleChanged(context, roleId),
  });
}

export async function deleteRole(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const roleId = own(context, pathIds(request.params, 'roleId').roleId);
  const key = keyHeader(request);
  noBodyProblems(key);
  return adminWrite(context, key.key, null, {
    batch: (writes, writeId) => writes.deleteRole(writeId, roleId),
    failure: (status) =>
      status === 409
        ? new HttpError(409, {
            code: 'conflict',
            title: 'Role in use',
            detail: 'A membership gives this role; give its members another role first.',
            errors: [{ parameter: 'roleId', code: 'role_in_use', message: 'a membership gives this role' }],
          })
        : notFound('Role'),
    done: () => roleChanged(context, roleId),
  });
}

export async function listRoles(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const store = adminStore(context);
  return page(
    request,
    context,
    'admin/roles',
    (role: RoleOut) => role.id,
    (after, limit) => store.listRoles(after, limit),
  );
}

export async function getRole(request: IRequest, context: Context): Promise<Response> {
  await requireAdmin(request, context);
  const role = await adminStore(context).getRole(own(context, pathIds(request.params, 'roleId').roleId));
  if (role === undefined) throw notFound('Role');
  return json(role);
}
