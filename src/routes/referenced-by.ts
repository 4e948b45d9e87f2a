import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { readPosition, signPosition } from '../http/cursor.ts';
import { json } from '../http/respond.ts';
import { isLimited, showsReference } from '../domain/access.ts';
import { referencingPage, type ReferencingAfter } from '../storage/references.ts';
import { recordPageStart } from './record-pages.ts';

/**
 * GET /records/{recordId}/referenced-by: the live records that reference this one and that the
 * caller can read, by (objectId, field, recordId), keyset paged. The caller must be able to read
 * the record itself, else 404 (as for a record that does not exist).
 */
export async function referencedBy(request: IRequest, context: Context): Promise<Response> {
  const { caller, record, limit, cursor, secret, scope } = await recordPageStart(request, context, 'referenced-by');
  const after =
    cursor === undefined ? undefined : ((await readPosition(secret, cursor, scope, 'cursor')) as ReferencingAfter);
  const limited = isLimited(caller);
  const rows = await referencingPage(
    context.reads,
    context.meter,
    record.id,
    [...caller.roles.keys()],
    after,
    limit + 1,
    limited,
  );
  const read = rows.slice(0, limit);
  const last = read.at(-1);
  // Under a defined role, a record it does not let the caller read, or a field it hides, is not
  // shown: the page may be short, and goes on after the last one read.
  const items = limited ? read.filter((row) => showsReference(caller, row)) : read;
  const nextCursor =
    rows.length > limit && last !== undefined
      ? await signPosition(secret, [last.objectId, last.field, last.recordId], scope)
      : null;
  return json({
    items: items.map(({ objectId, field, recordId, name }) => ({ objectId, field, recordId, name })),
    nextCursor,
  });
}
