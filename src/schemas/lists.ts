import * as v from 'valibot';
import { EntityName, Id } from './common.ts';
import { FieldValue, ReadRecordSchema, RecordSchema } from './record.ts';
import { ObjectRule, Role } from './admin.ts';

/** GET /workspaces/{workspaceId}/records: a page, and the cursor of the next one (null on the last). */
export const RecordPage = v.strictObject({ items: v.array(ReadRecordSchema), nextCursor: v.nullable(v.string()) });

/**
 * One committed change: `created` carries the record as created; `updated` the fields that
 * changed, each with its new value (`null`: removed), and `name` when the name changed;
 * `deleted` and `restored` nothing more, but the new values of formulas reading `updatedAt`.
 * Folding a record's items in feed order from its `created` item rebuilds its values (by field
 * name), name, version, `deleted`, `updatedAt` (`at`) and `updatedBy` (`by`).
 */
export const ChangeItem = v.strictObject({
  cursor: v.string(),
  type: v.picklist(['created', 'updated', 'deleted', 'restored']),
  at: Id,
  by: Id,
  recordId: Id,
  version: Id,
  record: v.exactOptional(RecordSchema),
  fieldValues: v.exactOptional(v.array(FieldValue)),
  name: v.exactOptional(RecordSchema.entries.name),
});

/** GET /workspaces/{workspaceId}/changes: `nextCursor` resumes after the last item (or where the caller was). */
export const ChangePage = v.strictObject({ items: v.array(ChangeItem), nextCursor: v.string() });

/** GET /me: `admin` says whether the caller may call the admin API of their tenant with their key. */
export const Me = v.strictObject({
  userId: Id,
  name: EntityName,
  admin: v.boolean(),
  workspaces: v.array(
    v.strictObject({
      workspaceId: Id,
      name: EntityName,
      role: v.exactOptional(Role),
      roleId: v.exactOptional(v.pipe(Id, v.description('A role the tenant defined, given instead of `role`.'))),
      objects: v.exactOptional(
        v.pipe(
          v.array(ObjectRule),
          v.description("The defined role's rules: what the caller may do, object by object."),
        ),
      ),
    }),
  ),
});

/** A ticket that opens a workspace's live stream once, where no Authorization header can be sent. */
export const LiveTicket = v.strictObject({
  ticket: v.pipe(v.string(), v.description('Send as `?ticket=` on the live stream, once, before `expiresAt`.')),
  expiresAt: v.pipe(v.string(), v.isoTimestamp(), v.description('When the ticket stops being accepted (60 s).')),
});
