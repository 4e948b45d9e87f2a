import { ReadRecordSchema } from '../schemas/record.ts';
import { readRecord } from './records-read.ts';
import { EXPAND } from './parameters.ts';
import type { Operation } from './operation.ts';

/** Reads of one record, by its id alone or through a workspace. */
export const recordReadOperations = {
  getRecord: {
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
  getWorkspaceRecord: {
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
} satisfies Record<string, Operation>;
