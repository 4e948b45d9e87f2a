import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { recordAccess } from '../domain/access.ts';
import { parsePageQuery } from '../domain/list-query.ts';
import { keyHashOf } from '../http/auth.ts';
import { cursorKey, readPosition, signPosition } from '../http/cursor.ts';
import { invalidQuery, notFound, unauthorized } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { queryOf } from '../http/query.ts';
import { json } from '../http/respond.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import { referencingPage, type ReferencingAfter } from '../storage/references.ts';

/**
 * GET /records/{recordId}/referenced-by: the live records that reference this one and that the
 * caller can read, by (objectId, field, recordId), keyset paged. The caller must be able to read
 * the record itself, else 404 (as for a record that does not exist).
 */
export async function referencedBy(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { recordId } = tenantPathIds(request.params, context.tenant.id, 'recordId');
  const sent = queryOf(request.url);
  const query = parsePageQuery(sent.params);
  const { caller, records } = await context.cached.recordContext(keyHash, [recordId]);
  if (caller === undefined) throw unauthorized();
  const problems = [...sent.problems, ...(query.ok ? [] : query.problems)];
  if (!query.ok || problems.length > 0) throw invalidQuery(problems);
  const record = records.get(recordId);
  if (record === undefined || recordAccess(caller, record.sharedWorkspaceIds) === 'none') throw notFound('Record');
  const { limit, cursor } = query.value;
  const secret = await cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
  const scope = `referenced-by/${recordId}`;
  const after =
    cursor === undefined ? undefined : ((await readPosition(secret, cursor, scope, 'cursor')) as ReferencingAfter);
  const rows = await referencingPage(
    context.reads,
    context.meter,
    recordId,
    [...caller.roles.keys()],
    after,
    limit + 1,
  );
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const nextCursor =
    rows.length > limit && last !== undefined
      ? await signPosition(secret, [last.objectId, last.field, last.recordId], scope)
      : null;
  return json({ items, nextCursor });
}
