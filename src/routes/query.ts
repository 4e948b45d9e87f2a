import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { canonicalJson } from '../core/json.ts';
import { catalogOf, namedFields, parseQuery, project } from '../domain/query.ts';
import { objectsHiding, objectsInView, rowsSeen, shownTo } from '../domain/access.ts';
import { cursorKey, readPosition, signPosition } from '../http/cursor.ts';
import { invalidBody, rejected } from '../http/errors.ts';
import { json } from '../http/respond.ts';
import { memberRead } from './member-read.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import { Queries, type Position } from '../storage/query.ts';
import { withExpanded, withLookupValues } from './expand.ts';
import { pageOf } from './lists.ts';

/**
 * POST /workspaces/{workspaceId}/records/query: read-only, members (viewers too). One round trip
 * reads the caller and the definitions in view (whose fields type the filter), one more the page.
 * Order of checks: 401, the body 400 (a non-member learns nothing: 404 first), a foreign cursor 400.
 */
export async function queryRecords(request: IRequest, context: Context): Promise<Response> {
  const { workspaceId, caller, objects, building, body } = await memberRead(request, context);
  // The objects and fields the caller's role lets them see are all a query may name.
  const view = objectsInView(caller, workspaceId, objects);
  const parsed = parseQuery(body, catalogOf(view, building));
  // A well-formed query naming only fields it cannot filter on (lookups) is 422, any other problem 400.
  if (!parsed.ok)
    throw parsed.problems.every((p) => p.status === 422) ? rejected(parsed.problems) : invalidBody(parsed.problems);
  const query = parsed.value;
  // A field hidden in one object and shown in another: the query leaves the first object's records out.
  const excluded = objectsHiding(caller, workspaceId, objects, namedFields(query));
  const queries = new Queries(context.reads, context.meter, context.tenant.id, rowsSeen(caller, workspaceId, excluded));
  const secret = await cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
  const scope = `query/${workspaceId}/${canonicalJson(query.scope)}`;
  const after =
    query.cursor === undefined ? undefined : ((await readPosition(secret, query.cursor, scope, '/cursor')) as Position);
  const page = await queries.page(workspaceId, query, after);
  // Hidden fields leave each record before anything is expanded from it.
  const looked = await withLookupValues(context, caller, page.records, objects);
  const shown = looked.map((record) => shownTo(caller, record, workspaceId));
  const expanded = await withExpanded(context, caller, shown, query.expand);
  const items = pageOf(expanded.map((record) => project(record, query.fields)));
  const cut = items.length < page.records.length;
  const next = cut ? page.positions[items.length - 1] : page.next;
  return json({
    items,
    nextCursor: next === undefined ? null : await signPosition(secret, next, scope),
    ...(page.count === undefined ? {} : { count: page.count }),
  });
}
