/**
 * Examples for /openapi.json: a request body for every operation that takes one, the success
 * body of every operation that answers one, and a problem for every error status. They are
 * shown by /docs and by generated clients; a test validates each against its schema.
 */

export interface OperationExamples {
  request?: unknown;
  response?: unknown;
}

const AT = 1795392601008;

const contact = {
  id: 1,
  objectId: 1,
  objectVersion: 1,
  name: 'Ada Lovelace',
  fieldValues: [
    { fieldName: 'firstName', value: 'Ada' },
    { fieldName: 'lastName', value: 'Lovelace' },
  ],
  creationType: 'User',
  version: 1,
  deleted: false,
  sharedWorkspaceIds: [1],
  ownedBy: 1,
  createdAt: AT,
  createdBy: 1,
  updatedAt: AT,
  updatedBy: 1,
  isTemplate: false,
};

const patched = {
  ...contact,
  fieldValues: [...contact.fieldValues, { fieldName: 'stage', value: 'customer' }],
  version: 2,
  updatedAt: AT + 60_000,
};

const noRows = { processed: 0, created: 0, updated: 0, unchanged: 0, failed: 0, total: 200_000 };
const importExample = {
  id: 1,
  workspaceId: 1,
  objectId: 1,
  mode: 'create',
  format: 'csv',
  status: 'succeeded',
  rows: { processed: 200_000, created: 199_998, updated: 0, unchanged: 0, failed: 2, total: 200_000 },
  bytes: 26_446_269,
  bytesRead: 26_446_269,
  createdAt: AT,
  finishedAt: AT + 95_000,
};

/** A role: sales people read and change their own deals, never see the margin and cannot move the stage. */
const roleInput = {
  name: 'Sales',
  objects: [
    { objectId: 1, read: true, create: true, update: true, rows: 'own', fields: { margin: 'hidden', stage: 'read' } },
  ],
};
const role = {
  id: 1,
  name: 'Sales',
  objects: [
    {
      objectId: 1,
      read: true,
      create: true,
      update: true,
      delete: false,
      rows: 'own',
      fields: { margin: 'hidden', stage: 'read' },
    },
  ],
};

const definitionInput = {
  name: 'Contact',
  workspaceIds: [1],
  nameTemplate: '{firstName} {lastName}',
  fields: [
    { name: 'firstName', type: 'text', required: true },
    { name: 'lastName', type: 'text' },
    { name: 'stage', type: 'select', options: ['lead', 'customer'] },
    { name: 'company', type: 'reference', target: 2 },
  ],
};

const definition = { id: 1, version: 1, ...definitionInput };
/** The next version: rollups of the deals (object 3) whose `contact` references each contact. */
const definitionWithRollups = {
  ...definitionInput,
  fields: [
    ...definitionInput.fields,
    { name: 'deals', type: 'rollup', from: { objectId: 3, field: 'contact' }, op: 'count' },
    { name: 'dealTotal', type: 'rollup', from: { objectId: 3, field: 'contact' }, op: 'sum', of: 'amount' },
  ],
};
const stagePatch = { fieldValues: [{ fieldName: 'stage', value: 'customer' }] };
const cursor = 'Mg.xO5v0mXHj8Qm3n1wXb2pXg';
const tenant = { id: 2, name: 'Acme', database: 'DB_2', status: 'active', createdAt: AT };
const move = { id: 1, from: 'DB_2', to: 'DB_3', status: 'copying', rowsCopied: 0, startedAt: AT };
const webhook = {
  id: 1,
  url: 'https://hooks.example.com/records',
  types: ['created', 'updated'],
  objectIds: [1],
  createdAt: AT,
  status: 'active',
  reason: null,
};

export const EXAMPLES: Record<string, OperationExamples> = {
  getHealth: { response: { status: 'ok' } },
  getOpenApi: { response: { openapi: '3.1.0', info: { title: 'Record service', version: '1.0.0' }, paths: {} } },
  createRecords: {
    request: [{ objectId: 1, fieldValues: contact.fieldValues }],
    response: [{ status: 'Succeeded', record: contact }],
  },
  patchRecords: {
    request: [{ id: 1, ...stagePatch }],
    response: [{ status: 'Succeeded', record: patched }],
  },
  patchWorkspaceRecords: {
    request: [{ id: 1, ...stagePatch }],
    response: [{ status: 'Succeeded', record: patched }],
  },
  patchRecord: { request: stagePatch, response: patched },
  listRecords: { response: { items: [contact], nextCursor: cursor } },
  upsertRecords: {
    request: {
      matchOn: 'email',
      items: [
        {
          fieldValues: [
            { fieldName: 'email', value: 'ada@example.com' },
            { fieldName: 'stage', value: 'customer' },
          ],
        },
        {
          fieldValues: [
            { fieldName: 'email', value: 'grace@example.com' },
            { fieldName: 'firstName', value: 'Grace' },
          ],
        },
      ],
    },
    response: [
      { status: 'Succeeded', result: 'updated', record: patched },
      {
        status: 'Succeeded',
        result: 'created',
        record: { ...contact, id: 2, name: 'Grace', fieldValues: [{ fieldName: 'firstName', value: 'Grace' }] },
      },
    ],
  },
  queryRecords: {
    request: {
      filter: {
        and: [
          { field: 'stage', op: 'in', value: ['lead', 'customer'] },
          { field: 'lastName', op: 'startsWith', value: 'Love' },
          { not: { field: 'createdAt', op: 'lt', value: AT - 86_400_000 } },
        ],
      },
      sort: [{ field: 'updatedAt', direction: 'desc' }],
      fields: ['firstName', 'lastName'],
      limit: 20,
      count: true,
    },
    response: { items: [contact], nextCursor: null, count: { value: 1, exact: true } },
  },
  aggregateRecords: {
    request: {
      objectId: 1,
      filter: { field: 'createdAt', op: 'gte', value: AT - 30 * 86_400_000 },
      groupBy: [{ field: 'stage' }, { field: 'createdAt', interval: 'month' }],
      measures: [{ op: 'count' }, { op: 'sum', field: 'amount' }],
      limit: 100,
    },
    response: {
      groups: [
        { key: { stage: 'customer', createdAt: '2026-11' }, values: [12, 48_500] },
        { key: { stage: 'lead', createdAt: '2026-11' }, values: [30, 9_200.5] },
        { key: { stage: null, createdAt: '2026-11' }, values: [2, null] },
      ],
      exact: true,
      nextCursor: null,
    },
  },
  listChanges: {
    response: {
      items: [
        { cursor, type: 'created', at: AT, by: 1, recordId: contact.id, version: 1, record: contact },
        {
          cursor,
          type: 'updated',
          at: AT + 60_000,
          by: 1,
          recordId: contact.id,
          version: 2,
          fieldValues: [{ fieldName: 'lastName', value: 'King' }],
          name: 'Ada King',
        },
      ],
      nextCursor: cursor,
    },
  },
  createLiveTicket: {
    response: { ticket: 'lt_Xq3b7RkM2pW9sT4vY8zA1cE5gH0jL6nP2rU7wB3dF9k', expiresAt: '2026-11-27T12:01:00.000Z' },
  },
  openLive: {},
  createWebhook: {
    request: { url: 'https://hooks.example.com/records', types: ['created', 'updated'], objectIds: [1] },
    response: { ...webhook, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
  },
  listWebhooks: { response: { items: [webhook] } },
  updateWebhook: { request: { status: 'active' }, response: webhook },
  deleteWebhook: {},
  replayWebhook: { request: { after: cursor }, response: webhook },
  listDeliveries: {
    response: {
      items: [
        { cursor, at: AT + 5_000, status: 204, durationMs: 84, error: null },
        { cursor, at: AT, status: 503, durationMs: 120, error: 'HTTP 503: upstream busy' },
      ],
    },
  },
  getMe: {
    response: { userId: 1, name: 'Ada', admin: false, workspaces: [{ workspaceId: 1, name: 'Sales', role: 'editor' }] },
  },
  deleteRecord: { request: {}, response: { ...contact, version: 2, deleted: true, updatedAt: AT + 60_000 } },
  restoreRecord: { request: {}, response: { ...contact, version: 3, updatedAt: AT + 120_000 } },
  getRecord: {
    response: {
      ...contact,
      fieldValues: [...contact.fieldValues, { fieldName: 'company', value: 7 }],
      expanded: { company: { id: 7, objectId: 2, name: 'Analytical Engines Ltd', deleted: false } },
    },
  },
  createImport: { response: { ...importExample, status: 'queued', rows: noRows, bytesRead: 37 } },
  getImport: { response: importExample },
  startUpload: {
    response: { id: 14, name: 'survey.mp4', contentType: 'video/mp4', parts: [], createdAt: 1767225600000 },
  },
  uploadPart: { response: { partNumber: 1, size: 104857600 } },
  completeUpload: {
    response: {
      id: 14,
      name: 'survey.mp4',
      size: 1073741824,
      contentType: 'video/mp4',
      sha256: '2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae',
      createdAt: 1767225600000,
    },
  },
  uploadFile: {
    response: {
      id: 12,
      name: 'contract.pdf',
      size: 48213,
      contentType: 'application/pdf',
      sha256: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      createdAt: 1767225600000,
    },
  },
  listImports: {
    response: {
      items: [
        { ...importExample, id: 2, mode: 'update', matchOn: 'id', status: 'running', rows: noRows, bytesRead: 37 },
        importExample,
      ],
      nextCursor: cursor,
    },
  },
  cancelImport: {
    response: {
      ...importExample,
      status: 'cancelled',
      rows: { ...importExample.rows, processed: 500, created: 498 },
      bytesRead: 65_536,
    },
  },
  listReferencingRecords: {
    response: {
      items: [
        { recordId: 1, objectId: 1, field: 'company', name: 'Ada Lovelace' },
        { recordId: 4, objectId: 1, field: 'company', name: 'Charles Babbage' },
      ],
      nextCursor: cursor,
    },
  },
  getRecordHistory: {
    response: {
      items: [
        {
          version: 2,
          at: AT + 60_000,
          by: 2,
          type: 'updated',
          changes: [{ fieldName: 'lastName', from: 'Lovelace', to: 'King' }],
        },
        {
          version: 1,
          at: AT,
          by: 1,
          type: 'created',
          changes: contact.fieldValues.map(({ fieldName, value }) => ({ fieldName, from: null, to: value })),
        },
      ],
      nextCursor: null,
    },
  },
  listWorkspaceObjects: { response: { items: [definition], nextCursor: null } },
  getWorkspaceRecord: { response: contact },
  createUser: { request: { name: 'Ada' }, response: { id: 1, name: 'Ada' } },
  listUsers: {
    response: {
      items: [
        { id: 1, name: 'Ada' },
        { id: 2, name: 'Grace' },
      ],
      nextCursor: null,
    },
  },
  deleteUser: {},
  createKey: {
    response: { id: 1, key: 'rk_2b7yQm1x4h0cXh3V1n8eWq5oT9sZr6uKd0aPjLgBfYc', prefix: 'rk_2b7yQm1', createdAt: AT },
  },
  listKeys: { response: [{ id: 1, prefix: 'rk_2b7yQm1', createdAt: AT }] },
  revokeKey: {},
  createWorkspace: { request: { name: 'Sales' }, response: { id: 1, name: 'Sales' } },
  listWorkspaces: { response: { items: [{ id: 1, name: 'Sales' }], nextCursor: cursor } },
  deleteWorkspace: {},
  listMembers: { response: { items: [{ workspaceId: 1, userId: 1, role: 'editor' }], nextCursor: null } },
  putMember: { request: { role: 'editor' }, response: { workspaceId: 1, userId: 1, role: 'editor' } },
  deleteMember: {},
  createObject: { request: definitionInput, response: definition },
  listObjects: { response: { items: [definition], nextCursor: null } },
  updateObject: { request: definitionWithRollups, response: { id: 1, version: 2, ...definitionWithRollups } },
  getObject: { response: definition },
  getObjectVersion: { response: definition },
  createRole: { request: roleInput, response: role },
  listRoles: { response: { items: [role], nextCursor: null } },
  getRole: { response: role },
  updateRole: { request: roleInput, response: role },
  deleteRole: {},
  createTenant: {
    request: { name: 'Acme', database: 'DB_2' },
    response: { ...tenant, adminKey: 'rk2_7Hq0bX3mN9vL1cT5yR8wZ2kF6pJ4dS0aGeUiOnMhBlQ' },
  },
  listTenants: {
    response: {
      items: [{ id: 1, name: 'default', database: 'DB', status: 'active', createdAt: 0 }, tenant],
      nextCursor: null,
    },
  },
  getTenant: { response: { ...tenant, fileBytes: 734_003_200 } },
  deleteTenant: { response: { ...tenant, status: 'deleting' } },
  moveTenant: { request: { database: 'DB_3' }, response: move },
  getMove: { response: { ...move, status: 'succeeded', rowsCopied: 61_482, finishedAt: AT + 94_000 } },
  cancelMove: { response: { ...move, status: 'cancelled', rowsCopied: 12_000, finishedAt: AT + 20_000 } },
  listDatabases: {
    response: {
      items: [
        { name: 'DB', tenants: 1, bytes: 1_254_330_368, fileBytes: 5_368_709_120 },
        { name: 'DB_2', tenants: 1, bytes: 86_016, fileBytes: 734_003_200 },
        { name: 'DB_3', tenants: 0, bytes: 61_440, fileBytes: 0 },
      ],
    },
  },
};

const PROBLEMS: Record<number, { code: string; title: string; detail?: string; errors?: unknown[] }> = {
  400: {
    code: 'invalid_request',
    title: 'Request body is invalid',
    detail: '1 problem in the request body',
    errors: [{ pointer: '/0/objectId', code: 'required', message: 'objectId is required' }],
  },
  401: { code: 'unauthorized', title: 'Authentication required', detail: 'Send Authorization: Bearer <api key>.' },
  403: { code: 'forbidden', title: 'Forbidden', detail: 'Editor rights in the workspace are needed.' },
  404: { code: 'not_found', title: 'Record not found' },
  409: {
    code: 'record_deleted',
    title: 'Conflict',
    detail: '1 problem in the request',
    errors: [{ pointer: '/0/id', code: 'record_deleted', message: 'the record is deleted' }],
  },
  410: {
    code: 'gone',
    title: 'Cursor too old',
    detail: 'Changes after this cursor were pruned (they are kept 7 days). Start again without `after`.',
  },
  412: { code: 'precondition_failed', title: 'Precondition failed', detail: 'If-Match matches no current version.' },
  413: { code: 'payload_too_large', title: 'Request body is too large', detail: 'The limit is 1048576 bytes.' },
  415: {
    code: 'unsupported_media_type',
    title: 'Unsupported media type',
    detail: 'Send Content-Type: application/json.',
  },
  422: {
    code: 'unprocessable',
    title: 'Request cannot be applied',
    detail: '1 problem in the request',
    errors: [{ pointer: '/0/fieldValues/0/value', code: 'invalid_value', message: 'expected one of the options' }],
  },
  405: { code: 'method_not_allowed', title: 'Method not allowed', detail: 'Allowed: GET.' },
  429: { code: 'rate_limited', title: 'Too many requests', detail: 'Retry after 10 seconds.' },
  500: { code: 'internal', title: 'Internal error', detail: 'Quote the request id when reporting this.' },
  503: {
    code: 'unavailable',
    title: 'Record busy',
    detail: 'The record could not take this request within 10 seconds; nothing was written.',
  },
};

/** A problem as the service answers it with `status`. */
export function problemExample(status: number): unknown {
  const problem = PROBLEMS[status] ?? { code: 'internal', title: 'Error' };
  return { type: 'about:blank', status, ...problem };
}
