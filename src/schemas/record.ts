import * as v from 'valibot';
import { FieldName, Id } from './common.ts';
import { maxChars } from './max-chars.ts';

/** SPEC 2.2. `value: null` in a request means "no value" (CONTRACT §6). */
export const FieldValue = v.strictObject({
  fieldName: FieldName,
  value: v.pipe(v.unknown(), v.description('Any JSON value; its type is checked against the field definition.')),
});

/** SPEC 2.1: the record, as every operation answers it. */
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

/** SPEC 2.4. */
export const BatchItemSchema = v.strictObject({ status: v.literal('Succeeded'), record: RecordSchema });

/** SPEC 4.1: one element of the create batch. */
export const CreateItem = v.strictObject({
  objectId: RecordSchema.entries.objectId,
  fieldValues: RecordSchema.entries.fieldValues,
  isTemplate: v.exactOptional(RecordSchema.entries.isTemplate),
});
export type CreateItemIn = v.InferOutput<typeof CreateItem>;

/** SPEC 4.2: the patch of one record. */
export const PatchBody = v.strictObject({
  ownedBy: v.exactOptional(RecordSchema.entries.ownedBy),
  fieldValues: v.exactOptional(RecordSchema.entries.fieldValues),
});
export type PatchIn = v.InferOutput<typeof PatchBody>;

/** SPEC 4.3 / 4.4: one element of a patch batch. */
export const PatchItem = v.strictObject({ id: RecordSchema.entries.id, ...PatchBody.entries });
export type PatchItemIn = v.InferOutput<typeof PatchItem>;
