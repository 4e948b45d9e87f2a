import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { recordAccess } from '../domain/access.ts';
import { historyItems } from '../domain/history.ts';
import { readCursor, signCursor } from '../http/cursor.ts';
import { json } from '../http/respond.ts';
import { historyRows } from '../storage/history.ts';
import { pageOf } from './lists.ts';
import { recordPageStart } from './record-pages.ts';

/**
 * GET /records/{recordId}/history: the record's kept changes, newest first, each with every field
 * it changed (from, to), keyset paged by version. The caller must be able to read the record,
 * else 404, as for a record that does not exist (the same answer and the same cost).
 */
export async function recordHistory(request: IRequest, context: Context): Promise<Response> {
  const { caller, record, limit, cursor, secret, scope } = await recordPageStart(request, context, 'history');
  const below = cursor === undefined ? record.version + 1 : await readCursor(secret, cursor, scope, 'cursor');
  // One change more than the page: whether more follow, and the previous state of a change kept before diffs.
  const { rows, sizeCut } = await historyRows(context.reads, context.meter, record.id, below, limit + 1);
  const { hidden } = recordAccess(caller, record).fields;
  const items = pageOf(historyItems(rows.slice(0, limit), rows[limit], hidden));
  const last = items.at(-1);
  const more = rows.length > items.length || sizeCut;
  const nextCursor = more && last !== undefined ? await signCursor(secret, last.version, scope) : null;
  return json({ items, nextCursor });
}
