import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { isLimited, recordAccess, type Caller } from '../domain/access.ts';
import { parsePageQuery } from '../domain/list-query.ts';
import { keyHashOf } from '../http/auth.ts';
import { cursorKey } from '../http/cursor.ts';
import { invalidQuery, notFound, unauthorized } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { queryOf } from '../http/query.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import type { RecordStanding } from '../storage/store.ts';

/** Where a page about one record starts: who asks, the record as access sees it, the page asked for. */
export interface RecordPageStart {
  caller: Caller;
  record: RecordStanding;
  limit: number;
  cursor: string | undefined;
  /** The key cursors of this page are signed with, and the scope they are signed for. */
  secret: string;
  scope: string;
}

/**
 * The opening of the pages about one record (`/records/{recordId}/history`, `…/referenced-by`):
 * the caller, the page's query, and the record, read in one round trip without its values. A
 * record the caller cannot read, another tenant's and a missing one answer the same 404 at the
 * same cost, whatever the record's size.
 */
export async function recordPageStart(request: IRequest, context: Context, page: string): Promise<RecordPageStart> {
  const keyHash = await keyHashOf(request);
  const { recordId } = tenantPathIds(request.params, context.tenant.id, 'recordId');
  const sent = queryOf(request.url);
  const query = parsePageQuery(sent.params);
  const { caller, standing } = await context.store.recordStanding(keyHash, recordId);
  if (caller === undefined) throw unauthorized();
  const problems = [...sent.problems, ...(query.ok ? [] : query.problems)];
  if (!query.ok || problems.length > 0) throw invalidQuery(problems);
  if (standing === undefined || !recordAccess(caller, standing).read) throw notFound('Record');
  if (isLimited(caller)) context.meter.hideRows();
  const secret = await cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
  return {
    caller,
    record: standing,
    limit: query.value.limit,
    cursor: query.value.cursor,
    secret,
    scope: `${page}/${recordId}`,
  };
}
