import * as v from 'valibot';
import { FieldName, Id } from './common.ts';

const Count = v.pipe(Id, v.description('Rows'));

/** An import as its importer reads it. */
export const ImportSchema = v.strictObject({
  id: Id,
  workspaceId: Id,
  objectId: Id,
  mode: v.picklist(['create', 'upsert']),
  matchOn: v.exactOptional(FieldName),
  format: v.picklist(['ndjson', 'csv']),
  status: v.pipe(
    v.picklist(['queued', 'running', 'succeeded', 'cancelled', 'failed']),
    v.description(
      '`failed`: the file could not be read as its format past its start, or the importer may no longer write ' +
        'to the workspace; the rows applied before stay.',
    ),
  ),
  rows: v.strictObject({
    processed: v.pipe(Count, v.description('Data rows read so far (skipped ones too).')),
    created: Count,
    updated: Count,
    unchanged: Count,
    failed: v.pipe(Count, v.description('Rows skipped: each is listed by GET /imports/{id}/errors.')),
  }),
  createdAt: Id,
  finishedAt: v.exactOptional(Id),
  failure: v.exactOptional(v.pipe(v.string(), v.description('Why a `failed` import stopped.'))),
});
