import * as v from 'valibot';
import {
  ApiKeyInfo,
  Membership,
  MembershipInput,
  MembershipPage,
  Named,
  NamedInput,
  User,
  UserInput,
  NewApiKey,
  ObjectDefinition,
  ObjectDefinitionInput,
  ObjectDefinitionPage,
  UserPage,
  WorkspacePage,
  DatabaseList,
  NewTenant,
  Tenant,
  TenantInput,
  MoveInput,
  Move,
  TenantPage,
  RoleInput,
  DefinedRole,
  RolePage,
} from '../schemas/admin.ts';
import { MAX_BATCH } from '../schemas/common.ts';
import { Health } from '../schemas/problem.ts';
import {
  BatchItemSchema,
  CreateItem,
  PatchBody,
  PatchItem,
  ReadRecordSchema,
  RecordSchema,
  ReferencingPage,
  UpsertBody,
} from '../schemas/record.ts';
import * as admin from './admin.ts';
import * as tenants from './tenants.ts';
import * as roles from './roles.ts';
import * as moves from './moves.ts';
import { openApiResponse } from '../openapi.ts';
import { health } from './meta.ts';
import {
  createRecords,
  deleteRecord,
  patchRecord,
  patchRecords,
  restoreRecord,
  upsertRecords,
} from './record-writes.ts';
import { ChangePage, Me, RecordPage } from '../schemas/lists.ts';
import { listChanges, listRecords, listWorkspaceObjects, me } from './lists.ts';
import { queryRecords } from './query.ts';
import { QueryBody, QueryPage, UpsertAnswer } from '../schemas/query.ts';
import { EmptyBody } from '../write/admit.ts';
import { readRecord } from './records-read.ts';
import { referencedBy } from './referenced-by.ts';
import { recordHistory } from './history.ts';
import { HistoryPage } from '../schemas/history.ts';
import { cancelImport, createImport, getImport, importErrors, listImports } from './imports.ts';
import { exportRecords } from './export.ts';
import { ImportPage, ImportSchema } from '../schemas/imports.ts';

/** A record as an NDJSON export line shows it. */
const EXAMPLE_NDJSON_RECORD =
  '{"id":1,"objectId":1,"objectVersion":1,"name":"Ada Lovelace","fieldValues":[{"fieldName":"firstName",' +
  '"value":"Ada"}],"creationType":"System","version":1,"deleted":false,"sharedWorkspaceIds":[1],"ownedBy":1,' +
  '"createdAt":1795392601008,"createdBy":1,"updatedAt":1795392601008,"updatedBy":1,"isTemplate":false}\n';
import type { Operation, QueryParameter } from './operation.ts';
import {
  DeliveryList,
  NewWebhook,
  ReplayInput,
  WebhookInput,
  WebhookList,
  WebhookSchema,
  WebhookStatusInput,
} from '../schemas/webhooks.ts';
import {
  createWebhook,
  deleteWebhook,
  listDeliveries,
  listWebhooks,
  replayWebhook,
  updateWebhook,
} from './webhooks.ts';

export type { Handler, Method, Operation, QueryParameter, Tag } from './operation.ts';

const EXPAND: QueryParameter = {
  name: 'expand',
  description:
    'Reference fields to expand, comma-separated (`expand=company,partners`): each record gains `expanded` with ' +
    'the records they reference that the caller can read (`id`, `objectId`, `name`, `deleted`), `null` for one it ' +
    'cannot. One more D1 read for the page. A field that is not a reference field: 400.',
  schema: { type: 'string' },
};

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

/** The admin API's lists: keyset pages by id. */
const PAGE_QUERY: QueryParameter[] = [
  {
    name: 'limit',
    description: 'Items per page, 1 to 100 (default 50).',
    schema: { type: 'integer', minimum: 1, maximum: 100 },
  },
  {
    name: 'cursor',
    description: 'The `nextCursor` of the previous page, unchanged (an edited or foreign cursor is 400).',
    schema: { type: 'string' },
  },
];

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

const batchOf = <S extends v.GenericSchema>(item: S) => v.pipe(v.array(item), v.minLength(1), v.maxLength(MAX_BATCH));
const items = v.array(BatchItemSchema);
const ALL_OR_NOTHING =
  'All or nothing: when any element fails, nothing is written and every failing element is ' +
  'listed by pointer (`/i/...`); a shape problem answers 400 first, else the status of the ' +
  'first failing element.';

/** Every operation of the service, in routing order (a literal segment before a parameter). */
export const operations: Operation[] = [
  {
    method: 'GET',
    path: '/health',
    handler: health,
    operationId: 'getHealth',
    tag: 'Service',
    summary: 'Health: 200 when D1 answers',
    description: 'Needs no key; 503 when D1 does not answer.',
    auth: 'none',
    ok: { status: 200, schema: Health },
    errors: [],
  },
  {
    method: 'GET',
    path: '/openapi.json',
    handler: () => openApiResponse(operations),
    operationId: 'getOpenApi',
    tag: 'Service',
    summary: 'This document',
    description:
      'The OpenAPI 3.1 document of every operation, generated from the schemas that validate requests. Needs no key.',
    auth: 'none',
    ok: { status: 200 },
    errors: [],
  },
  {
    method: 'POST',
    path: '/records/batch',
    handler: createRecords,
    operationId: 'createRecords',
    tag: 'Records',
    summary: 'Create 1 to 20 records (all or nothing)',
    description:
      "Creates records of object definitions the caller may create for (editor in one of the object's " +
      `workspaces). ${ALL_OR_NOTHING}`,
    auth: 'key',
    body: batchOf(CreateItem),
    ok: { status: 201, schema: items },
    idempotencyKey: true,
    errors: [422],
  },
  {
    method: 'POST',
    path: '/workspaces/:workspaceId/records/query',
    handler: queryRecords,
    operationId: 'queryRecords',
    tag: 'Records',
    summary: 'Find records of a workspace: filter, sort, count',
    description:
      'Read-only; members (viewers too), else 404. A typed filter tree over system and object fields (every problem' +
      ' listed with its pointer, 400), sort by id, system or indexed fields with keyset cursors bound to the ' +
      'filter, search and sort, a `fields` projection and an optional `count`. A search, a sort by `createdAt`, ' +
      "`updatedAt`, `name` or an indexed field, and an `eq` on an indexed field read the workspace's keys in the " +
      "page's order: every page but the last holds `limit` items, and its cost grows with the page, not the " +
      'workspace. Other sorts are ordered over the workspace. A filter on unindexed fields alone reads at most ' +
      '5,000 candidates a page and may end early with a `nextCursor` (fewer or no items): keep following it until ' +
      'it is null. A `count` reads at most 20,000 candidates: past them, or past 10,000 matches, it is a lower ' +
      'bound (`exact: false`). So the rows a request reads are bounded whatever the shape of its filter. A walk ' +
      'by a key that writes move (a sort, relevance) passes over records a change moved after its ' +
      'first page: it shows each record at most once and every unchanged one exactly once. A search (every word ' +
      'starts a word of the name, case folded, accents ignored) filters like a condition; without a `sort` it is ' +
      'answered by relevance (the whole name, then names holding every word whole, then any other match), then id.',
    auth: 'key',
    body: QueryBody,
    ok: { status: 200, schema: QueryPage },
    errors: [],
  },
  {
    method: 'POST',
    path: '/objects/:objectId/records/upsert',
    handler: upsertRecords,
    operationId: 'upsertRecords',
    tag: 'Records',
    summary: 'Create or update 1 to 20 records by a unique field (all or nothing)',
    description:
      'Each item whose `matchOn` value (a unique field) a live record holds patches that record (merged as a ' +
      "patch; editor in one of its workspaces), else creates one (editor in one of the object's workspaces). " +
      'Each answer says `created`, `updated` or `unchanged`. The same value twice in one request is 400; ' +
      'concurrent upserts of one new value create exactly one record. An object the caller cannot see is 404. ' +
      ALL_OR_NOTHING,
    auth: 'key',
    body: UpsertBody,
    ok: { status: 200, schema: UpsertAnswer },
    idempotencyKey: true,
    errors: [403, 404, 409, 422],
  },
  {
    method: 'PATCH',
    path: '/records/batch',
    handler: patchRecords,
    operationId: 'patchRecords',
    tag: 'Records',
    summary: 'Patch 1 to 20 records (all or nothing)',
    description:
      "Merges each element's field values into its record; needs editor in any of each record's " +
      `workspaces. ${ALL_OR_NOTHING}`,
    auth: 'key',
    body: batchOf(PatchItem),
    ok: { status: 200, schema: items },
    idempotencyKey: true,
    errors: [403, 404, 409, 422],
  },
  {
    method: 'PATCH',
    path: '/workspaces/:workspaceId/records/batch',
    handler: patchRecords,
    operationId: 'patchWorkspaceRecords',
    tag: 'Records',
    summary: 'Patch 1 to 20 records of a workspace (all or nothing)',
    description:
      'As patchRecords, counting only records shared with the workspace, and needing editor in it. ' + ALL_OR_NOTHING,
    auth: 'key',
    body: batchOf(PatchItem),
    ok: { status: 200, schema: items },
    idempotencyKey: true,
    errors: [403, 409, 422],
  },
  {
    method: 'GET',
    path: '/workspaces/:workspaceId/records/export',
    handler: exportRecords,
    operationId: 'exportRecords',
    tag: 'Records',
    summary: 'Download every live record of an object shared with a workspace',
    description:
      'Streamed in id order, read a page at a time (the memory it takes does not grow with the workspace): ' +
      '`format=ndjson` (the default) answers one record per line as reads show it; `format=csv` a header ' +
      '`id,name,version,updatedAt` (each left out when a field of an older definition holds its name) and a column ' +
      'per field of the current definition (a string as it is, other values and every `json` value as JSON, no value ' +
      'empty). A cell a spreadsheet would run as a formula (starting `=`, `+`, `-`, `@`, tab or carriage return; not ' +
      "a number) gets a `'` before it, which an import takes off again, unless `formulas=keep`. Either imports back " +
      'with `mode=update&matchOn=id`. A record changed during the download appears once. Members (viewers too). ' +
      "The headers go out before any page is read: the export's whole cost (rows read, round trips) is logged with " +
      'its request id when it ends.',
    auth: 'key',
    ok: { status: 200 },
    fileAnswer: {
      'application/x-ndjson': EXAMPLE_NDJSON_RECORD,
      'text/csv':
        "id,name,version,updatedAt,firstName,lastName,motto\r\n1,Ada Lovelace,2,1795392661008,Ada,Lovelace,'=1+1\r\n",
    },
    query: [
      {
        name: 'objectId',
        required: true,
        description: 'The object whose records to export (required).',
        schema: { type: 'integer', minimum: 0 },
      },
      {
        name: 'format',
        description: '`ndjson` (default) or `csv`.',
        schema: { type: 'string', enum: ['ndjson', 'csv'] },
      },
      {
        name: 'formulas',
        description:
          "A CSV export only: `escape` (default) puts a `'` before each cell a spreadsheet would run as a formula; " +
          '`keep` writes every cell as it is.',
        schema: { type: 'string', enum: ['escape', 'keep'] },
      },
    ],
    errors: [],
  },
  {
    method: 'POST',
    path: '/workspaces/:workspaceId/imports',
    handler: createImport,
    operationId: 'createImport',
    tag: 'Records',
    summary: 'Import a file of records in the background',
    description:
      'Editors of the workspace. The body (up to 100 MB, with its Content-Length) is NDJSON (`application/x-ndjson`: ' +
      'a line is `{ "fieldValues": [...], "isTemplate"? }`) or CSV (`text/csv`, RFC 4180: a header row naming ' +
      "fields, cells parsed by their field's type, an empty cell no value, several values as a JSON array or " +
      "separated by `;`, an export's `'` before a formula taken off). It is kept in R2 and applied in chunks, each " +
      "one D1 transaction with the import's position, so every row is applied exactly once through restarts. " +
      'Records are created with `creationType: "System"` by the importer; `mode=upsert&matchOn=<unique field>` ' +
      "patches the record holding each row's value instead; `mode=update&matchOn=id` patches the record each row " +
      'names by `id` (one of the object shared with the workspace, else the row fails; nothing is created) and ' +
      "takes an export as it is: a row's `version`, when given, must be the record's (else the row fails: it " +
      "changed since), the record's other properties (`name`, `updatedAt`, …) are ignored, and in CSV an empty " +
      'cell removes the value. Each row is checked as a create or patch element (I-JSON, depth, types). A row that ' +
      'fails is skipped and listed; the others are applied; an import whose rows all fail is `failed`. A file that ' +
      'is not NDJSON or CSV of the object at all: 400 at once. Follow `Location`.',
    auth: 'key',
    fileBody: {
      'application/x-ndjson': '{"fieldValues":[{"fieldName":"firstName","value":"Ada"}]}\n',
      'text/csv': 'firstName,lastName\r\nAda,Lovelace\r\n"Grace ""Amazing""",Hopper\r\n',
    },
    ok: { status: 202, schema: ImportSchema, location: true },
    query: [
      {
        name: 'objectId',
        required: true,
        description: 'The object the rows are records of (required).',
        schema: { type: 'integer', minimum: 0 },
      },
      {
        name: 'mode',
        description: '`create` (default), `upsert` or `update`.',
        schema: { type: 'string', enum: ['create', 'upsert', 'update'] },
      },
      {
        name: 'matchOn',
        description: 'An upsert: the unique field that finds the record to patch. An update: `id` (the default).',
        schema: { type: 'string' },
      },
    ],
    idempotencyKey: true,
    errors: [403],
  },
  {
    method: 'GET',
    path: '/workspaces/:workspaceId/imports',
    handler: listImports,
    operationId: 'listImports',
    tag: 'Records',
    summary: "List the caller's imports into a workspace",
    description:
      "Newest first, a keyset page at a time. An administrator of the tenant sees everyone's imports into the " +
      'workspace. Members only, else 404.',
    auth: 'key',
    ok: { status: 200, schema: ImportPage },
    query: PAGE_QUERY,
    errors: [],
  },
  {
    method: 'GET',
    path: '/imports/:importId',
    handler: getImport,
    operationId: 'getImport',
    tag: 'Records',
    summary: 'Follow an import: its status and counts',
    description: 'The importer only; anyone else: 404.',
    auth: 'key',
    ok: { status: 200, schema: ImportSchema },
    errors: [],
  },
  {
    method: 'DELETE',
    path: '/imports/:importId',
    handler: cancelImport,
    operationId: 'cancelImport',
    tag: 'Records',
    summary: 'Cancel an import',
    description:
      'No chunk starts after it; the rows applied stay. Cancelling again answers the cancelled import as it stands ' +
      '(so a retry, keyed or not, is safe). An import already finished: 409.',
    auth: 'key',
    ok: { status: 200, schema: ImportSchema },
    idempotencyKey: true,
    errors: [409],
  },
  {
    method: 'GET',
    path: '/imports/:importId/errors',
    handler: importErrors,
    operationId: 'listImportErrors',
    tag: 'Records',
    summary: 'The rows an import skipped, and why',
    description:
      'NDJSON, streamed in row order: `{ "row": <1-based data row>, "errors": [ { pointer, code, message, ' +
      'column? } ] }`: `pointer` into the row as a JSON element, and for a CSV file the `column` at fault.',
    auth: 'key',
    ok: { status: 200 },
    fileAnswer: {
      'application/x-ndjson':
        '{"row":2,"errors":[{"pointer":"/fieldValues/0/value","code":"invalid_type","message":"expected integer",' +
        '"column":"age"}]}\n',
    },
    errors: [],
  },
  {
    method: 'PATCH',
    path: '/workspaces/:workspaceId/records/:recordId',
    handler: patchRecord,
    operationId: 'patchRecord',
    tag: 'Records',
    summary: 'Patch one record of a workspace',
    description:
      'Merges field values by name (`null` removes a value). A patch that changes nothing keeps ' +
      'the version; a change raises it by exactly 1. Honours `If-Match` (strong comparison).',
    auth: 'key',
    body: PatchBody,
    ok: { status: 200, schema: RecordSchema, etag: true },
    ifMatch: true,
    idempotencyKey: true,
    errors: [403, 409, 412, 422],
  },
  {
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
  {
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
  {
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
  {
    method: 'POST',
    path: '/workspaces/:workspaceId/webhooks',
    handler: createWebhook,
    operationId: 'createWebhook',
    tag: 'Webhooks',
    summary: 'Subscribe a URL to the changes of a workspace (secret shown once)',
    description:
      "Every later change of the workspace's feed that matches `types` and `objectIds` (left out: all) is POSTed to" +
      " `url` as its feed item, with Standard Webhooks headers: `webhook-id` (the item's feed cursor, the same on " +
      'every retry; dedupe by it), `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,` base64 HMAC-' +
      'SHA256 with the key in `secret` of `<id>.<timestamp>.<body>`). In feed order, one at a time; a non-2xx, a ' +
      'timeout (10 s) or a network error is retried after 5 s, doubling to at most 1 h; failing 3 days in a row ' +
      'disables the subscription. `url` must be `https:` (422 otherwise). Editors only: a viewer is 403. ' +
      'A retry with the same Idempotency-Key answers the same subscription and secret.',
    auth: 'key',
    idempotencyKey: true,
    body: WebhookInput,
    ok: { status: 201, schema: NewWebhook },
    errors: [403, 422],
  },
  {
    method: 'GET',
    path: '/workspaces/:workspaceId/webhooks',
    handler: listWebhooks,
    operationId: 'listWebhooks',
    tag: 'Webhooks',
    summary: "List a workspace's webhook subscriptions",
    description: 'Oldest first, never their secrets. A disabled subscription says why in `reason`. Editors only.',
    auth: 'key',
    ok: { status: 200, schema: WebhookList },
    errors: [403],
  },
  {
    method: 'PATCH',
    path: '/workspaces/:workspaceId/webhooks/:webhookId',
    handler: updateWebhook,
    operationId: 'updateWebhook',
    tag: 'Webhooks',
    summary: 'Pause or resume a subscription',
    description:
      '`disabled` pauses it; `active` resumes it where it stopped (the item it was failing on is retried at once), ' +
      'also after it was disabled for failing.',
    auth: 'key',
    idempotencyKey: true,
    body: WebhookStatusInput,
    ok: { status: 200, schema: WebhookSchema },
    errors: [403],
  },
  {
    method: 'DELETE',
    path: '/workspaces/:workspaceId/webhooks/:webhookId',
    handler: deleteWebhook,
    operationId: 'deleteWebhook',
    tag: 'Webhooks',
    summary: 'Delete a subscription',
    description: 'Nothing more is sent; its delivery log goes with it.',
    auth: 'key',
    idempotencyKey: true,
    ok: { status: 204 },
    errors: [403],
  },
  {
    method: 'POST',
    path: '/workspaces/:workspaceId/webhooks/:webhookId/replay',
    handler: replayWebhook,
    operationId: 'replayWebhook',
    tag: 'Webhooks',
    summary: 'Send again every matching change after a feed cursor',
    description:
      "`after` is a cursor of the workspace's change feed (an item's `cursor` or `webhook-id`). Delivery goes back " +
      'to that point at once; items are sent again with their own `webhook-id`. A cursor older than the feed keeps ' +
      '(7 days) is 410.',
    auth: 'key',
    idempotencyKey: true,
    body: ReplayInput,
    ok: { status: 200, schema: WebhookSchema },
    errors: [403, 410],
  },
  {
    method: 'GET',
    path: '/workspaces/:workspaceId/webhooks/:webhookId/deliveries',
    handler: listDeliveries,
    operationId: 'listDeliveries',
    tag: 'Webhooks',
    summary: 'The last 100 delivery attempts',
    description:
      "Newest first: the item's cursor, when, the receiver's status (null without an answer), how long it took, and" +
      ' why it failed (null on a 2xx).',
    auth: 'key',
    ok: { status: 200, schema: DeliveryList },
    errors: [403],
  },
  {
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
  {
    method: 'DELETE',
    path: '/workspaces/:workspaceId/records/:recordId',
    handler: deleteRecord,
    operationId: 'deleteRecord',
    tag: 'Records',
    summary: 'Delete a record (soft)',
    description:
      "Sets `deleted: true` and raises the version by 1, in the record's turn like a patch; " +
      'deleting a deleted record changes nothing. Honours `If-Match`. Takes no body, or `{}`.',
    auth: 'key',
    body: EmptyBody,
    bodyOptional: true,
    ok: { status: 200, schema: RecordSchema, etag: true },
    ifMatch: true,
    idempotencyKey: true,
    errors: [403, 412],
  },
  {
    method: 'POST',
    path: '/workspaces/:workspaceId/records/:recordId/restore',
    handler: restoreRecord,
    operationId: 'restoreRecord',
    tag: 'Records',
    summary: 'Restore a deleted record',
    description:
      'Sets `deleted: false` and raises the version by 1; restoring a live record changes ' +
      'nothing. Honours `If-Match`. Takes no body, or `{}`.',
    auth: 'key',
    body: EmptyBody,
    bodyOptional: true,
    ok: { status: 200, schema: RecordSchema, etag: true },
    ifMatch: true,
    idempotencyKey: true,
    errors: [403, 412],
  },
  {
    method: 'GET',
    path: '/records/:recordId',
    handler: readRecord,
    operationId: 'getRecord',
    tag: 'Records',
    summary: 'Read a record visible to the caller',
    description:
      "Visible when shared with a workspace the caller belongs to; otherwise 404. The ETag is the record's version.",
    auth: 'key',
    ok: { status: 200, schema: ReadRecordSchema, etag: true },
    query: [EXPAND],
    errors: [],
  },
  {
    method: 'GET',
    path: '/records/:recordId/referenced-by',
    handler: referencedBy,
    operationId: 'listReferencingRecords',
    tag: 'Records',
    summary: 'List the live records that reference a record',
    description:
      'The live records whose reference fields name this record and that the caller can read, by object, field ' +
      'and record id (keyset pages: `nextCursor` until null). The caller must be able to read the record, else 404.',
    auth: 'key',
    ok: { status: 200, schema: ReferencingPage },
    query: PAGE_QUERY,
    errors: [],
  },
  {
    method: 'GET',
    path: '/records/:recordId/history',
    handler: recordHistory,
    operationId: 'getRecordHistory',
    tag: 'Records',
    summary: "A record's changes, newest first",
    description:
      'Each kept change: its version, when (`at`), by whom (`by`), its type, and every field it changed with its ' +
      'value before (`from`) and after (`to`), `null` where the field had none (a creation lists the values it ' +
      'was created with). Changes are kept as long as the change feed keeps them (7 days unless configured ' +
      'longer): older ones are gone from here too. Keyset pages by version (`nextCursor` until null). The caller ' +
      'must be able to read the record, else 404.',
    auth: 'key',
    ok: { status: 200, schema: HistoryPage },
    query: PAGE_QUERY,
    errors: [],
  },
  {
    method: 'GET',
    path: '/workspaces/:workspaceId/records/:recordId',
    handler: readRecord,
    operationId: 'getWorkspaceRecord',
    tag: 'Records',
    summary: 'Read a record shared with a workspace the caller belongs to',
    description: 'A record not shared with this workspace, or a workspace the caller is not a member of, is 404.',
    auth: 'key',
    ok: { status: 200, schema: ReadRecordSchema, etag: true },
    query: [EXPAND],
    errors: [],
  },
  {
    method: 'POST',
    path: '/admin/users',
    handler: admin.createUser,
    operationId: 'createUser',
    tag: 'Admin',
    summary: 'Create a user',
    description:
      'Users own API keys and are members of workspaces. An administrator (`admin: true`) calls the admin API of ' +
      'their tenant with their own key.',
    auth: 'admin',
    idempotencyKey: true,
    body: UserInput,
    ok: { status: 201, schema: User },
    errors: [],
  },
  {
    method: 'GET',
    path: '/admin/users',
    handler: admin.listUsers,
    operationId: 'listUsers',
    tag: 'Admin',
    summary: 'List users',
    description: 'Ascending by id, one keyset page at a time.',
    auth: 'admin',
    ok: { status: 200, schema: UserPage },
    query: PAGE_QUERY,
    errors: [],
  },
  {
    method: 'DELETE',
    path: '/admin/users/:userId',
    handler: admin.deleteUser,
    operationId: 'deleteUser',
    tag: 'Admin',
    summary: 'Delete a user with their keys and memberships',
    description:
      "Revokes the user's keys and removes their memberships in one transaction: their keys " +
      'answer 401 at once in the isolate that deleted them and within 30 s everywhere. Records ' +
      "keep the user's id in `createdBy`, `updatedBy` and `ownedBy`.",
    auth: 'admin',
    idempotencyKey: true,
    ok: { status: 204 },
    errors: [],
  },
  {
    method: 'POST',
    path: '/admin/users/:userId/keys',
    handler: admin.createKey,
    operationId: 'createKey',
    tag: 'Admin',
    summary: 'Issue an API key for a user (shown once)',
    description:
      'The answer is the only time the key is shown; only its SHA-256 and its first characters (`prefix`) are stored.',
    auth: 'admin',
    idempotencyKey: true,
    ok: { status: 201, schema: NewApiKey },
    errors: [],
  },
  {
    method: 'GET',
    path: '/admin/users/:userId/keys',
    handler: admin.listKeys,
    operationId: 'listKeys',
    tag: 'Admin',
    summary: "List a user's API keys",
    description: 'Oldest first; ids and prefixes, never the keys.',
    auth: 'admin',
    ok: { status: 200, schema: v.array(ApiKeyInfo) },
    errors: [],
  },
  {
    method: 'DELETE',
    path: '/admin/keys/:keyId',
    handler: admin.revokeKey,
    operationId: 'revokeKey',
    tag: 'Admin',
    summary: 'Revoke an API key',
    description:
      'The key answers 401 at once in the isolate that revoked it and within 30 s everywhere. An ' +
      'unknown or already revoked key is 404.',
    auth: 'admin',
    idempotencyKey: true,
    ok: { status: 204 },
    errors: [],
  },
  {
    method: 'POST',
    path: '/admin/workspaces',
    handler: admin.createWorkspace,
    operationId: 'createWorkspace',
    tag: 'Admin',
    summary: 'Create a workspace',
    description: 'Records are shared with workspaces; users see records through their memberships.',
    auth: 'admin',
    idempotencyKey: true,
    body: NamedInput,
    ok: { status: 201, schema: Named },
    errors: [],
  },
  {
    method: 'GET',
    path: '/admin/workspaces',
    handler: admin.listWorkspaces,
    operationId: 'listWorkspaces',
    tag: 'Admin',
    summary: 'List workspaces',
    description: 'Ascending by id, one keyset page at a time.',
    auth: 'admin',
    ok: { status: 200, schema: WorkspacePage },
    query: PAGE_QUERY,
    errors: [],
  },
  {
    method: 'DELETE',
    path: '/admin/workspaces/:workspaceId',
    handler: admin.deleteWorkspace,
    operationId: 'deleteWorkspace',
    tag: 'Admin',
    summary: 'Delete a workspace and its memberships',
    description:
      'Refused with 409 (`workspace_in_use`, naming what keeps it) while the current version of ' +
      'an object definition lists the workspace or any record is shared with it.',
    auth: 'admin',
    idempotencyKey: true,
    ok: { status: 204 },
    errors: [409],
  },
  {
    method: 'GET',
    path: '/admin/workspaces/:workspaceId/members',
    handler: admin.listMembers,
    operationId: 'listMembers',
    tag: 'Admin',
    summary: "List a workspace's members",
    description: 'Ascending by user id, one keyset page at a time; 404 for an unknown workspace.',
    auth: 'admin',
    ok: { status: 200, schema: MembershipPage },
    query: PAGE_QUERY,
    errors: [],
  },
  {
    method: 'PUT',
    path: '/admin/workspaces/:workspaceId/members/:userId',
    handler: admin.putMember,
    operationId: 'putMember',
    tag: 'Admin',
    summary: 'Add a member or change their role',
    description:
      'Built-in roles: `{"role": "editor"}` (may change records) or `{"role": "viewer"}` (may read them); or a ' +
      'role the tenant defined: `{"roleId": id}` (422 `unknown_role` when it has none). Exactly one of them.',
    auth: 'admin',
    idempotencyKey: true,
    body: MembershipInput,
    ok: { status: 200, schema: Membership },
    errors: [422],
  },
  {
    method: 'DELETE',
    path: '/admin/workspaces/:workspaceId/members/:userId',
    handler: admin.deleteMember,
    operationId: 'deleteMember',
    tag: 'Admin',
    summary: 'Remove a member',
    description: 'Idempotent: 204 even when the user was not a member; 404 only for an unknown workspace or user.',
    auth: 'admin',
    idempotencyKey: true,
    ok: { status: 204 },
    errors: [],
  },
  {
    method: 'POST',
    path: '/admin/objects',
    handler: admin.createObject,
    operationId: 'createObject',
    tag: 'Admin',
    summary: 'Create an object definition (version 1)',
    description: 'Every `{field}` of `nameTemplate` must name a field; every workspace must exist (else 422).',
    auth: 'admin',
    idempotencyKey: true,
    body: ObjectDefinitionInput,
    ok: { status: 201, schema: ObjectDefinition },
    errors: [422],
  },
  {
    method: 'GET',
    path: '/admin/objects',
    handler: admin.listObjects,
    operationId: 'listObjects',
    tag: 'Admin',
    summary: 'List object definitions',
    description: 'The current version of each, ascending by id, one keyset page at a time.',
    auth: 'admin',
    ok: { status: 200, schema: ObjectDefinitionPage },
    query: PAGE_QUERY,
    errors: [],
  },
  {
    method: 'PUT',
    path: '/admin/objects/:objectId',
    handler: admin.updateObject,
    operationId: 'updateObject',
    tag: 'Admin',
    summary: 'Replace an object definition (next version)',
    description:
      'Every version is kept; records keep the version they were created with, and patches are ' +
      'checked against the current one.',
    auth: 'admin',
    idempotencyKey: true,
    body: ObjectDefinitionInput,
    ok: { status: 200, schema: ObjectDefinition },
    errors: [409, 422],
  },
  {
    method: 'GET',
    path: '/admin/objects/:objectId',
    handler: admin.getObject,
    operationId: 'getObject',
    tag: 'Admin',
    summary: 'Read the current object definition',
    description: 'In the shape `PUT` accepts, with `id` and `version`.',
    auth: 'admin',
    ok: { status: 200, schema: ObjectDefinition },
    errors: [],
  },
  {
    method: 'GET',
    path: '/admin/objects/:objectId/versions/:version',
    handler: admin.getObjectVersion,
    operationId: 'getObjectVersion',
    tag: 'Admin',
    summary: 'Read one version of an object definition',
    description: 'Any kept version (the one a record was created with, say); 404 if there is none.',
    auth: 'admin',
    ok: { status: 200, schema: ObjectDefinition },
    errors: [],
  },
  {
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
  {
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
  {
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
  {
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
  {
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
  {
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
  {
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
  {
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
  {
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
  {
    method: 'POST',
    path: '/tenants/:tenantId/move',
    handler: moves.startMove,
    operationId: 'moveTenant',
    tag: 'Tenants',
    summary: 'Move a tenant to another database',
    description:
      'Copies its rows to `database` while it reads and writes as usual, then switches: its writes are held for ' +
      'that moment (503 with `Retry-After`, nothing written) and its reads never fail. Ids, versions, the feed ' +
      '(cursors go on), keys, webhooks and imports carry over; nothing of it is left on the old database. ' +
      'Follow `Location`. One move of a tenant at a time; the default tenant and a move to the database it is ' +
      'on: 409.',
    auth: 'operator',
    idempotencyKey: true,
    body: MoveInput,
    ok: { status: 202, schema: Move, location: true },
    errors: [409],
  },
  {
    method: 'GET',
    path: '/tenants/:tenantId/moves/:moveId',
    handler: moves.getMove,
    operationId: 'getMove',
    tag: 'Tenants',
    summary: 'Read a move',
    description: 'Where the move stands and how many rows it has copied.',
    auth: 'operator',
    ok: { status: 200, schema: Move },
    errors: [],
  },
  {
    method: 'DELETE',
    path: '/tenants/:tenantId/moves/:moveId',
    handler: moves.cancelMove,
    operationId: 'cancelMove',
    tag: 'Tenants',
    summary: 'Cancel a move',
    description:
      'Before it switches: nothing changes (the partial copy leaves the new database in the background) and the ' +
      'move is `cancelled`; cancelling again answers the same. Once it switched or ended otherwise: 409.',
    auth: 'operator',
    idempotencyKey: true,
    ok: { status: 200, schema: Move },
    errors: [409],
  },
  {
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
];
