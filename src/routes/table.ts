import type { IRequest } from 'itty-router';
import * as v from 'valibot';
import type { Context } from '../context.ts';
import { ApiKey, MembershipInput, Membership, Named, NamedInput, ObjectDefinition, ObjectDefinitionInput } from '../schemas/admin.ts';
import { MAX_BATCH } from '../schemas/common.ts';
import { Health } from '../schemas/problem.ts';
import { BatchItemSchema, CreateItem, PatchBody, PatchItem, RecordSchema } from '../schemas/record.ts';
import * as admin from './admin.ts';
import { openApiResponse } from '../openapi.ts';
import { health } from './meta.ts';
import { createRecords } from './records-create.ts';
import { patchRecord, patchRecords } from './records-patch.ts';
import { ChangePage, Me, RecordPage } from '../schemas/lists.ts';
import { listChanges, listRecords, me } from './lists.ts';
import { deleteRecord, EmptyBody, restoreRecord } from './records-lifecycle.ts';
import { readRecord } from './records-read.ts';

export interface QueryParameter {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

const LIST_QUERY: QueryParameter[] = [
  { name: 'limit', description: 'Records per page, 1 to 100 (default 50).', schema: { type: 'integer', minimum: 1, maximum: 100 } },
  { name: 'cursor', description: 'The `nextCursor` of the previous page, unchanged; it is bound to the same filters.', schema: { type: 'string' } },
  { name: 'objectId', description: 'Only records of this object definition.', schema: { type: 'integer', minimum: 0 } },
  { name: 'deleted', description: 'Deleted records: `exclude` (default), `include` or `only`.', schema: { type: 'string', enum: ['exclude', 'include', 'only'] } },
  { name: 'updatedAfter', description: 'Only records updated after this time (epoch ms).', schema: { type: 'integer', minimum: 0 } },
];

const FEED_QUERY: QueryParameter[] = [
  { name: 'after', description: 'A cursor of the feed: the changes after it. Without it, the oldest kept change comes first.', schema: { type: 'string' } },
  { name: 'limit', description: 'Changes per page, 1 to 1000 (default 100).', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
];

export type Handler = (request: IRequest, context: Context) => Promise<Response> | Response;
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One operation: how it is routed and how /openapi.json documents it. */
export interface Operation {
  method: Method;
  /** itty-router path; `:name` parameters are ids (digits only). */
  path: string;
  handler: Handler;
  summary: string;
  auth: 'key' | 'admin' | 'none';
  body?: v.GenericSchema;
  /** The body may be left out altogether. */
  bodyOptional?: true;
  ok: { status: number; schema?: v.GenericSchema; etag?: boolean };
  /** Honours an `If-Match` request header. */
  ifMatch?: boolean;
  /** Accepts an `Idempotency-Key` request header (a write). */
  idempotencyKey?: true;
  /** Query parameters, as /openapi.json documents them. */
  query?: QueryParameter[];
  /** Statuses beyond those every operation of its kind can answer (see openapi.ts). */
  errors: number[];
}

const batchOf = <S extends v.GenericSchema>(item: S) => v.pipe(v.array(item), v.minLength(1), v.maxLength(MAX_BATCH));
const items = v.array(BatchItemSchema);

/** Every operation of the service, in routing order (a literal segment before a parameter). */
export const operations: Operation[] = [
  { method: 'GET', path: '/health', handler: health, summary: 'Health: 200 when D1 answers', auth: 'none', ok: { status: 200, schema: Health }, errors: [] },
  { method: 'GET', path: '/openapi.json', handler: () => openApiResponse(operations), summary: 'This document', auth: 'none', ok: { status: 200 }, errors: [] },
  {
    method: 'POST', idempotencyKey: true, path: '/records/batch', handler: createRecords, summary: 'Create 1 to 20 records (all or nothing)',
    auth: 'key', body: batchOf(CreateItem), ok: { status: 201, schema: items }, errors: [422],
  },
  {
    method: 'PATCH', idempotencyKey: true, path: '/records/batch', handler: patchRecords, summary: 'Patch 1 to 20 records (all or nothing)',
    auth: 'key', body: batchOf(PatchItem), ok: { status: 200, schema: items }, errors: [403, 404, 409, 422],
  },
  {
    method: 'PATCH', idempotencyKey: true, path: '/workspaces/:workspaceId/records/batch', handler: patchRecords,
    summary: 'Patch 1 to 20 records of a workspace (all or nothing)', auth: 'key', body: batchOf(PatchItem),
    ok: { status: 200, schema: items }, errors: [403, 409, 422],
  },
  {
    method: 'PATCH', idempotencyKey: true, path: '/workspaces/:workspaceId/records/:recordId', handler: patchRecord, summary: 'Patch one record of a workspace',
    auth: 'key', body: PatchBody, ok: { status: 200, schema: RecordSchema, etag: true }, ifMatch: true, errors: [403, 409, 412, 422],
  },
  {
    method: 'GET', path: '/workspaces/:workspaceId/records', handler: listRecords,
    summary: 'List the records shared with a workspace, by id, one page at a time. Also `field.<fieldName>=<value>`: only records whose field holds that value (its JSON text, or the string itself); several are ANDed.',
    auth: 'key', ok: { status: 200, schema: RecordPage }, query: LIST_QUERY, errors: [],
  },
  {
    method: 'GET', path: '/workspaces/:workspaceId/changes', handler: listChanges,
    summary: 'Follow every committed change of the records shared with a workspace, in commit order',
    auth: 'key', ok: { status: 200, schema: ChangePage }, query: FEED_QUERY, errors: [410],
  },
  { method: 'GET', path: '/me', handler: me, summary: 'The caller and their workspaces', auth: 'key', ok: { status: 200, schema: Me }, errors: [] },
  {
    method: 'DELETE', idempotencyKey: true, path: '/workspaces/:workspaceId/records/:recordId', handler: deleteRecord, summary: 'Delete a record (soft: it can be restored)',
    auth: 'key', ok: { status: 200, schema: RecordSchema, etag: true }, ifMatch: true, errors: [403, 412],
  },
  {
    method: 'POST', idempotencyKey: true, path: '/workspaces/:workspaceId/records/:recordId/restore', handler: restoreRecord, summary: 'Restore a deleted record',
    auth: 'key', body: EmptyBody, bodyOptional: true, ok: { status: 200, schema: RecordSchema, etag: true }, ifMatch: true, errors: [403, 412],
  },
  {
    method: 'GET', path: '/records/:recordId', handler: readRecord, summary: 'Read a record visible to the caller',
    auth: 'key', ok: { status: 200, schema: RecordSchema, etag: true }, errors: [],
  },
  {
    method: 'GET', path: '/workspaces/:workspaceId/records/:recordId', handler: readRecord,
    summary: 'Read a record shared with a workspace the caller belongs to', auth: 'key',
    ok: { status: 200, schema: RecordSchema, etag: true }, errors: [],
  },
  { method: 'POST', path: '/admin/users', handler: admin.createUser, summary: 'Create a user', auth: 'admin', body: NamedInput, ok: { status: 201, schema: Named }, errors: [] },
  { method: 'POST', path: '/admin/users/:userId/keys', handler: admin.createKey, summary: 'Issue an API key for a user (shown once)', auth: 'admin', ok: { status: 201, schema: ApiKey }, errors: [] },
  { method: 'POST', path: '/admin/workspaces', handler: admin.createWorkspace, summary: 'Create a workspace', auth: 'admin', body: NamedInput, ok: { status: 201, schema: Named }, errors: [] },
  {
    method: 'PUT', path: '/admin/workspaces/:workspaceId/members/:userId', handler: admin.putMember, summary: 'Add a member or change their role',
    auth: 'admin', body: MembershipInput, ok: { status: 200, schema: Membership }, errors: [],
  },
  { method: 'DELETE', path: '/admin/workspaces/:workspaceId/members/:userId', handler: admin.deleteMember, summary: 'Remove a member', auth: 'admin', ok: { status: 204 }, errors: [] },
  {
    method: 'POST', path: '/admin/objects', handler: admin.createObject, summary: 'Create an object definition (version 1)',
    auth: 'admin', body: ObjectDefinitionInput, ok: { status: 201, schema: ObjectDefinition }, errors: [422],
  },
  {
    method: 'PUT', path: '/admin/objects/:objectId', handler: admin.updateObject, summary: 'Replace an object definition (next version)',
    auth: 'admin', body: ObjectDefinitionInput, ok: { status: 200, schema: ObjectDefinition }, errors: [422],
  },
  { method: 'GET', path: '/admin/objects/:objectId', handler: admin.getObject, summary: 'Read the current object definition', auth: 'admin', ok: { status: 200, schema: ObjectDefinition }, errors: [] },
];
