import { ObjectDefinitionPage } from '../schemas/admin.ts';
import { ChangePage, Me, RecordPage } from '../schemas/lists.ts';
import { listChanges, listRecords, listWorkspaceObjects, me } from './lists.ts';
import type { Operation, QueryParameter } from './operation.ts';
import { EXPAND, PAGE_QUERY } from './parameters.ts';

/** A workspace's records: a keyset page, filtered. */
const LIST_QUERY: QueryParameter[] = [
  {
    name: 'limit',
    description: 'Records per page, 1 to 100 (default 50).',
    schema: { type: 'integer', minimum: 1, maximum: 100 },
  },
  {
    name: 'cursor',
    description: 'The `nextCursor` of the previous page, unchanged; it is bound to the same filters.',
    schema: { type: 'string' },
  },
  { name: 'objectId', description: 'Only records of this object definition.', schema: { type: 'integer', minimum: 0 } },
  {
    name: 'deleted',
    description: 'Deleted records: `exclude` (default), `include` or `only`.',
    schema: { type: 'string', enum: ['exclude', 'include', 'only'] },
  },
  {
    name: 'updatedAfter',
    description: 'Only records updated after this time (epoch ms).',
    schema: { type: 'integer', minimum: 0 },
  },
  EXPAND,
  {
    name: 'fieldFilters',
    description:
      'Any number of `field.<fieldName>=<value>` parameters: only records whose field holds that ' +
      'value, compared with the ' +
      "value's JSON text (`field.age=42`, `field.done=true`) or, for a string, the string itself " +
      '(`field.stage=lead`). ' +
      'Several are ANDed; each field at most once.',
    schema: {
      type: 'object',
      propertyNames: { pattern: '^field\\.[A-Za-z][A-Za-z0-9_]{0,99}$' },
      additionalProperties: { type: 'string' },
    },
    style: 'form',
    explode: true,
  },
];

/** A workspace's feed of changes. */
const FEED_QUERY: QueryParameter[] = [
  {
    name: 'after',
    description: 'A cursor of the feed: the changes after it. Without it, the oldest kept change comes first.',
    schema: { type: 'string' },
  },
  {
    name: 'limit',
    description: 'Changes per page, 1 to 1000 (default 100).',
    schema: { type: 'integer', minimum: 1, maximum: 1000 },
  },
  {
    name: 'start',
    description:
      'Without `after`: `oldest` (the default) starts at the oldest kept change; `latest` answers no items and a ' +
      '`nextCursor` after the newest change, to follow only what comes next. Not with `after`.',
    schema: { type: 'string', enum: ['oldest', 'latest'] },
  },
];

/** The lists a member reads: a workspace's records, its changes and its object definitions, and the caller. */
export const listOperations = {
  listRecords: {
    method: 'GET',
    path: '/workspaces/:workspaceId/records',
    handler: listRecords,
    operationId: 'listRecords',
    tag: 'Records',
    summary: 'List the records shared with a workspace',
    description:
      'Ascending by id, one page at a time (keyset pages: a walk sees each record that matched ' +
      'throughout exactly once). Besides the parameters below, `field.<fieldName>=<value>` keeps ' +
      'records whose field holds that value (its JSON text, or the string itself); several are ' +
      'ANDed. Members only, else 404.',
    auth: 'key',
    ok: { status: 200, schema: RecordPage },
    query: LIST_QUERY,
    errors: [],
  },
  listChanges: {
    method: 'GET',
    path: '/workspaces/:workspaceId/changes',
    handler: listChanges,
    operationId: 'listChanges',
    tag: 'Records',
    summary: "Follow the changes of a workspace's records",
    description:
      'Every committed change (created, updated, deleted, restored) of the records shared with ' +
      'the workspace, in commit order: a created record whole, an update as the fields it ' +
      'changed (and the name when it changed). Changes are kept 7 days; an older cursor is 410. ' +
      'Members only, else 404.',
    auth: 'key',
    ok: { status: 200, schema: ChangePage },
    query: FEED_QUERY,
    errors: [410],
  },
  listWorkspaceObjects: {
    method: 'GET',
    path: '/workspaces/:workspaceId/objects',
    handler: listWorkspaceObjects,
    operationId: 'listWorkspaceObjects',
    tag: 'Records',
    summary: 'List the object definitions of a workspace',
    description:
      'The current definition of each object shared with the workspace (its fields, their types and options, its ' +
      'name template), as `GET /admin/objects/{objectId}` shows it: what a client needs to show, create, filter and ' +
      'import its records. Ascending by id, one keyset page at a time. Members (viewers too), else 404.',
    auth: 'key',
    ok: { status: 200, schema: ObjectDefinitionPage },
    query: PAGE_QUERY,
    errors: [],
  },
  getMe: {
    method: 'GET',
    path: '/me',
    handler: me,
    operationId: 'getMe',
    tag: 'Records',
    summary: 'The caller and their workspaces',
    description:
      'The user behind the API key (`admin`: whether they administer their tenant, calling the admin API with this ' +
      'key), and each workspace they belong to, with its name and their role, by id.',
    auth: 'key',
    ok: { status: 200, schema: Me },
    errors: [],
  },
} satisfies Record<string, Operation>;
