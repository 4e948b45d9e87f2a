import * as v from 'valibot';
import { Id } from './common.ts';
import { RecordSchema } from './record.ts';
import { Role } from './admin.ts';

/** GET /workspaces/{workspaceId}/records: a page, and the cursor of the next one (null on the last). */
export const RecordPage = v.strictObject({ items: v.array(RecordSchema), nextCursor: v.nullable(v.string()) });

/** One committed change, with the record right after it. */
export const ChangeItem = v.strictObject({
  cursor: v.string(),
  type: v.picklist(['created', 'updated', 'deleted', 'restored']),
  at: Id,
  by: Id,
  record: RecordSchema,
});

/** GET /workspaces/{workspaceId}/changes: `nextCursor` resumes after the last item (or where the caller was). */
export const ChangePage = v.strictObject({ items: v.array(ChangeItem), nextCursor: v.string() });

/** GET /me. */
export const Me = v.strictObject({ userId: Id, workspaces: v.array(v.strictObject({ workspaceId: Id, role: Role })) });
