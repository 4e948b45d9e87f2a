import * as v from 'valibot';
import { FieldName, Id } from './common.ts';

const Value = v.pipe(v.unknown(), v.description('The JSON value, or `null` where the field had none.'));

/** One change of a record as its history shows it: who made it, when, and every field it changed. */
export const HistoryItem = v.strictObject({
  version: v.pipe(Id, v.minValue(1)),
  at: Id,
  by: Id,
  type: v.picklist(['created', 'updated', 'deleted', 'restored']),
  changes: v.array(v.strictObject({ fieldName: FieldName, from: Value, to: Value })),
});

/** GET /records/{recordId}/history: newest first; `nextCursor` goes on to older changes (null: no more kept). */
export const HistoryPage = v.strictObject({ items: v.array(HistoryItem), nextCursor: v.nullable(v.string()) });
