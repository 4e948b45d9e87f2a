import * as tenants from './tenants.ts';
import { DatabaseList, NewTenant, Tenant, TenantInput, TenantPage } from '../schemas/admin.ts';
import { PAGE_QUERY } from './parameters.ts';
import type { Operation } from './operation.ts';

/** The operator's tenants, and the databases they live on. */
export const tenantOperations = {
  createTenant: {
    method: 'POST',
    path: '/tenants',
    handler: tenants.createTenant,
    operationId: 'createTenant',
    tag: 'Tenants',
    summary: 'Create a tenant',
    description:
      'A tenant is an organization: its users, keys, workspaces, objects and records are its own and no other ' +
      "tenant's key sees them. Without `database` it goes to the database with the most room. `adminKey` is the " +
      'key of its first user, an administrator, who calls the admin API for it: shown once (a keyed retry shows ' +
      'it again).',
    auth: 'operator',
    idempotencyKey: true,
    body: TenantInput,
    ok: { status: 201, schema: NewTenant },
    errors: [],
  },
  listTenants: {
    method: 'GET',
    path: '/tenants',
    handler: tenants.listTenants,
    operationId: 'listTenants',
    tag: 'Tenants',
    summary: 'List tenants',
    description: 'Every tenant not deleted, the default tenant (id 1) first, ascending by id.',
    auth: 'operator',
    ok: { status: 200, schema: TenantPage },
    query: PAGE_QUERY,
    errors: [],
  },
  getTenant: {
    method: 'GET',
    path: '/tenants/:tenantId',
    handler: tenants.getTenant,
    operationId: 'getTenant',
    tag: 'Tenants',
    summary: 'Read a tenant',
    description: 'Its database and status; 404 once it is deleted.',
    auth: 'operator',
    ok: { status: 200, schema: Tenant },
    errors: [],
  },
  deleteTenant: {
    method: 'DELETE',
    path: '/tenants/:tenantId',
    handler: tenants.deleteTenant,
    operationId: 'deleteTenant',
    tag: 'Tenants',
    summary: 'Delete a tenant',
    description:
      'Its keys answer 401 at once; its rows, import files and objects are then removed in the background ' +
      '(`status: deleting`), after which it is 404. The default tenant cannot be deleted (409).',
    auth: 'operator',
    idempotencyKey: true,
    ok: { status: 202, schema: Tenant },
    errors: [409],
  },
  listDatabases: {
    method: 'GET',
    path: '/databases',
    handler: tenants.listDatabases,
    operationId: 'listDatabases',
    tag: 'Tenants',
    summary: 'List databases',
    description: 'Every D1 database the deployment serves records from, the tenants on it and its size in bytes.',
    auth: 'operator',
    ok: { status: 200, schema: DatabaseList },
    errors: [],
  },
} satisfies Record<string, Operation>;
