import * as v from 'valibot';
import { FieldName, Id } from './common.ts';
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
