import * as v from 'valibot';
import { FieldName, Id } from './common.ts';

const Count = v.pipe(Id, v.description('Rows'));

/** An import as its importer reads it. */
export const ImportSchema = v.strictObject({
  id: Id,
  workspaceId: Id,
  objectId: Id,
  mode: v.pipe(
    v.picklist(['create', 'upsert', 'update']),
    v.description(
      "`create`: a record of each row; `upsert`: the record holding the row's `matchOn` value patched, else " +
        'one created; `update`: the record the row names by `id` patched, none created.',
    ),
  ),
  matchOn: v.exactOptional(FieldName),
  format: v.picklist(['ndjson', 'csv']),
  status: v.pipe(
    v.picklist(['queued', 'running', 'succeeded', 'cancelled', 'failed']),
    v.description(
      '`failed`: every row failed (the import gives up once its first 1,000 rows all failed, without reading the ' +
        'rest), the file could not be read as its format past its start, or the importer may no longer write to ' +
        'the workspace; `failure` says why. The rows applied before stay.',
    ),
  ),
  rows: v.strictObject({
    processed: v.pipe(Count, v.description('Data rows read so far (skipped ones too).')),
    created: Count,
    updated: Count,
    unchanged: Count,
    failed: v.pipe(Count, v.description('Rows skipped: each is listed by GET /imports/{id}/errors.')),
    total: v.exactOptional(
      v.pipe(Count, v.description("The file's data rows, counted as it was received (blank lines are none).")),
    ),
  }),
  bytes: v.pipe(Id, v.description("The file's size in bytes.")),
  bytesRead: v.pipe(
    Id,
    v.description('Bytes of the file applied so far (a CSV header included): `bytesRead / bytes` is the progress.'),
  ),
  createdAt: Id,
  finishedAt: v.exactOptional(Id),
  failure: v.exactOptional(
    v.pipe(v.string(), v.description('Why a `failed` import stopped; for failing rows, the most common problem.')),
  ),
});

/** A page of the caller's imports into a workspace, newest first. */
export const ImportPage = v.strictObject({ items: v.array(ImportSchema), nextCursor: v.nullable(v.string()) });
