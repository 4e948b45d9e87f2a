import * as v from 'valibot';
import { FieldName, Id, MAX_BATCH } from './common.ts';
import { maxChars } from './max-chars.ts';

/** One field's value. `value: null` in a request means "no value" (a patch removes the value). */
export const FieldValue = v.strictObject({
  fieldName: FieldName,
  value: v.pipe(v.unknown(), v.description('Any JSON value; its type is checked against the field definition.')),
});

/** The record, as every operation answers it. */
export const RecordSchema = v.strictObject({
  id: Id,
  objectId: Id,
  objectVersion: Id,
  name: v.pipe(v.string(), v.minLength(1), maxChars(10000)),
  fieldValues: v.array(FieldValue),
  creationType: v.picklist(['System', 'User']),
  version: Id,
  deleted: v.boolean(),
  sharedWorkspaceIds: v.array(Id),
  ownedBy: v.nullable(Id),
  createdAt: Id,
  createdBy: Id,
  updatedAt: Id,
  updatedBy: Id,
  isTemplate: v.boolean(),
});
export type RecordOut = v.InferOutput<typeof RecordSchema>;

/** A referenced record as `expand` shows it to a reader who can read it. */
export const ExpandedReference = v.strictObject({
  id: Id,
  objectId: Id,
  name: RecordSchema.entries.name,
  deleted: v.boolean(),
});

/** A record as reads answer it: with `expanded` when the request asked to expand reference fields. */
export const ReadRecordSchema = v.strictObject({
  ...RecordSchema.entries,
  expanded: v.exactOptional(
    v.pipe(
      v.record(FieldName, v.nullable(v.union([ExpandedReference, v.array(ExpandedReference)]))),
      v.description(
        'Present when `expand` named reference fields: for each, the record it references (an array for a field of ' +
          'several ids), or `null` when it holds none or the caller cannot read it (such an id is left out of an ' +
          'array). Nothing else is said of a record the caller cannot read.',
      ),
    ),
  ),
});

/** A live record that references another, as `GET /records/{id}/referenced-by` lists it. */
export const Referencing = v.strictObject({
  recordId: Id,
  objectId: Id,
  field: FieldName,
  name: RecordSchema.entries.name,
});
export const ReferencingPage = v.strictObject({ items: v.array(Referencing), nextCursor: v.nullable(v.string()) });
export type FieldValueOut = v.InferOutput<typeof FieldValue>;

/** One element of a batch's answer, in request order. */
export const BatchItemSchema = v.strictObject({ status: v.literal('Succeeded'), record: RecordSchema });

/** One element of the create batch. */
export const CreateItem = v.strictObject({
  objectId: RecordSchema.entries.objectId,
  fieldValues: RecordSchema.entries.fieldValues,
  isTemplate: v.exactOptional(RecordSchema.entries.isTemplate),
});
export type CreateItemIn = v.InferOutput<typeof CreateItem>;

/** The patch of one record. */
export const PatchBody = v.strictObject({
  ownedBy: v.exactOptional(RecordSchema.entries.ownedBy),
  fieldValues: v.exactOptional(RecordSchema.entries.fieldValues),
});
export type PatchIn = v.InferOutput<typeof PatchBody>;

/** One element of a patch batch (with or without a workspace in the path). */
export const PatchItem = v.strictObject({ id: RecordSchema.entries.id, ...PatchBody.entries });
export type PatchItemIn = v.InferOutput<typeof PatchItem>;

/** One item of an upsert: a create element without its object (the path names it). */
export const UpsertItem = v.strictObject({
  fieldValues: CreateItem.entries.fieldValues,
  isTemplate: CreateItem.entries.isTemplate,
});
export const UpsertBody = v.strictObject({
  matchOn: v.pipe(FieldName, v.description('A unique field of the object: the value each item is matched on.')),
  items: v.pipe(v.array(UpsertItem), v.minLength(1), v.maxLength(MAX_BATCH)),
});
export type UpsertIn = v.InferOutput<typeof UpsertBody>;
