import * as roles from './roles.ts';
import { DefinedRole, RoleInput, RolePage } from '../schemas/admin.ts';
import { PAGE_QUERY } from './parameters.ts';
import type { Operation } from './operation.ts';

/** Roles a tenant's administrator defines beside `viewer` and `editor`. */
export const roleOperations = {
  createRole: {
    method: 'POST',
    path: '/admin/roles',
    handler: roles.createRole,
    operationId: 'createRole',
    tag: 'Admin',
    summary: 'Define a role',
    description:
      'Beside `viewer` and `editor`: per object, whether its members read, create, update and delete (and ' +
      'restore) records, all of them or only those they own (`rows: own`), and fields they may not see ' +
      '(`hidden`) or not change (`read`). An object the role does not list is as missing to its members. Give it ' +
      'to a member with `PUT /admin/workspaces/{workspaceId}/members/{userId}` `{"roleId": id}`. Unknown objects ' +
      "or fields, a hidden field the object's name template uses, a name the tenant has: 422, each listed.",
    auth: 'admin',
    idempotencyKey: true,
    body: RoleInput,
    ok: { status: 201, schema: DefinedRole },
    errors: [422],
  },
  listRoles: {
    method: 'GET',
    path: '/admin/roles',
    handler: roles.listRoles,
    operationId: 'listRoles',
    tag: 'Admin',
    summary: 'List roles',
    description: 'The roles the tenant defined, ascending by id, one keyset page at a time.',
    auth: 'admin',
    ok: { status: 200, schema: RolePage },
    query: PAGE_QUERY,
    errors: [],
  },
  getRole: {
    method: 'GET',
    path: '/admin/roles/:roleId',
    handler: roles.getRole,
    operationId: 'getRole',
    tag: 'Admin',
    summary: 'Read a role',
    description: 'Its rules written out whole (every right and `rows` given).',
    auth: 'admin',
    ok: { status: 200, schema: DefinedRole },
    errors: [],
  },
  updateRole: {
    method: 'PUT',
    path: '/admin/roles/:roleId',
    handler: roles.updateRole,
    operationId: 'updateRole',
    tag: 'Admin',
    summary: 'Replace a role',
    description: 'Its members hold the new rules at once here, within 30 s everywhere.',
    auth: 'admin',
    idempotencyKey: true,
    body: RoleInput,
    ok: { status: 200, schema: DefinedRole },
    errors: [422],
  },
  deleteRole: {
    method: 'DELETE',
    path: '/admin/roles/:roleId',
    handler: roles.deleteRole,
    operationId: 'deleteRole',
    tag: 'Admin',
    summary: 'Delete a role',
    description: 'Refused with 409 (`role_in_use`) while a membership gives it.',
    auth: 'admin',
    idempotencyKey: true,
    ok: { status: 204 },
    errors: [409],
  },
} satisfies Record<string, Operation>;
