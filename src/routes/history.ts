import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { recordAccess } from '../domain/access.ts';
import { historyItems } from '../domain/history.ts';
import { parsePageQuery } from '../domain/list-query.ts';
import { keyHashOf } from '../http/auth.ts';
import { cursorKey, readCursor, signCursor } from '../http/cursor.ts';
import { invalidQuery, notFound, unauthorized } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { queryOf } from '../http/query.ts';
import { json } from '../http/respond.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import { historyRows } from '../storage/history.ts';
import { pageOf } from './lists.ts';

/**
 * GET /records/{recordId}/history: the record's kept changes, newest first, each with every field
 * it changed (from, to), keyset paged by version. The caller must be able to read the record,
 * else 404, as for a record that does not exist (the same answer and the same one round trip).
 */
export async function recordHistory(request: IRequest, context: Context): Promise<Response> {
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
  const scope = `history/${recordId}`;
  const below = cursor === undefined ? record.version + 1 : await readCursor(secret, cursor, scope, 'cursor');
  // One change more than the page: whether more follow, and the previous state of a change kept before diffs.
  const { rows, sizeCut } = await historyRows(context.reads, context.meter, recordId, below, limit + 1);
  const items = pageOf(historyItems(rows.slice(0, limit), rows[limit]));
  const last = items.at(-1);
  const more = rows.length > items.length || sizeCut;
  const nextCursor = more && last !== undefined ? await signCursor(secret, last.version, scope) : null;
  return json({ items, nextCursor });
}
