import * as v from 'valibot';
import { MAX_BATCH } from '../schemas/common.ts';
import { UpsertAnswer } from '../schemas/query.ts';
import { BatchItemSchema, CreateItem, PatchBody, PatchItem, RecordSchema, UpsertBody } from '../schemas/record.ts';
import { EmptyBody } from '../write/admit.ts';
import type { Operation } from './operation.ts';
import {
  createRecords,
  deleteRecord,
  patchRecord,
  patchRecords,
  restoreRecord,
  upsertRecords,
} from './record-writes.ts';

/** A batch: 1 to 20 items. */
const batchOf = <S extends v.GenericSchema>(item: S) => v.pipe(v.array(item), v.minLength(1), v.maxLength(MAX_BATCH));
const items = v.array(BatchItemSchema);
const ALL_OR_NOTHING =
  'All or nothing: when any element fails, nothing is written and every failing element is ' +
  'listed by pointer (`/i/...`); a shape problem answers 400 first, else the status of the ' +
  'first failing element.';

/** The writes of records: creates, patches, upserts, deletes and restores, one or a batch at a time. */
export const recordWriteOperations = {
  createRecords: {
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
  upsertRecords: {
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
  patchRecords: {
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
  patchWorkspaceRecords: {
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
  patchRecord: {
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
  deleteRecord: {
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
  restoreRecord: {
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
} satisfies Record<string, Operation>;
