import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { canonicalJson } from '../core/json.ts';
import { caught } from '../core/caught.ts';
import { isLimited, limitsIn, objectsInView, withoutHidden, type Caller } from '../domain/access.ts';
import { parseFeedQuery, parseListQuery, parsePageQuery } from '../domain/list-query.ts';
import { definitionOut } from '../domain/definition.ts';
import { keyHashOf } from '../http/auth.ts';
import { cursorKey, readCursor, readPosition, signCursor, signPosition } from '../http/cursor.ts';
import { HttpError, invalidQuery, notFound, rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { MAX_PAGE_BYTES } from '../storage/store.ts';
import { queryOf } from '../http/query.ts';
import { json } from '../http/respond.ts';
import { feedItem } from '../domain/feed-item.ts';
import { expandProblems } from '../domain/references.ts';
import { withExpanded, withLookupValues } from './expand.ts';
import { isReadElsewhere } from '../domain/definition.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';

/**
 * A workspace's records, its change feed, and the caller. Reads always ask D1 (the
 * caller too), never the isolate's memory: the caller and the page in one round trip, the page
 * shown only once the caller proves a member. Order of checks: 401, a bad path id or query 400,
 * not a member 404, a forged cursor 400, a pruned feed position 410.
 */

/** Whoever is not a member learns nothing, whatever else is wrong with the request. */
function member(caller: Caller | undefined, workspaceId: number, problems: readonly InputProblem[]): Caller {
  if (caller === undefined) throw unauthorized();
  if (problems.length > 0) throw invalidQuery(problems);
  if (!caller.roles.has(workspaceId)) throw notFound('Workspace');
  return caller;
}

/** The caller alone, for a request refused before its page is read (a bad query or cursor). */
async function refuse(
  context: Context,
  keyHash: string,
  workspaceId: number,
  problems: readonly InputProblem[],
  error: unknown,
): Promise<never> {
  member((await context.store.createContext(keyHash, [])).caller, workspaceId, problems);
  throw error;
}

/** The key of cursors: CURSOR_SECRET, else a random key the service keeps in D1. */
function secretOf({ env, meter }: Context): Promise<string> {
  return cursorKey(env.CURSOR_SECRET, () => storedCursorKey(env.DB, meter));
}

/** GET /workspaces/{workspaceId}/records: keyset pages by id, so a walk sees each record once. */
export async function listRecords(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  const sent = queryOf(request.url);
  const query = parseListQuery(sent.params);
  const problems = [...sent.problems, ...(query.ok ? [] : query.problems)];
  if (!query.ok || problems.length > 0) return refuse(context, keyHash, workspaceId, problems, invalidQuery(problems));
  const { filter, limit, cursor, expand } = query.value;
  const secret = await secretOf(context);
  const scope = `records/${workspaceId}/${canonicalJson(filter)}`;
  const after = await caught(async () => (cursor === undefined ? 0 : readCursor(secret, cursor, scope, 'cursor')));
  if (!after.ok) return refuse(context, keyHash, workspaceId, [], after.error);
  // With the definitions in view (same round trip): lookups and expands read them.
  const page = await context.lists.records(keyHash, workspaceId, filter, after.value, limit + 1, true);
  const caller = member(page.caller, workspaceId, []);
  // A lookup is read when a record is answered: nothing stored can match it. A rollup is kept
  // apart from the record's values, which a list compares: a query filters it.
  // (As the reader sees the objects: a field hidden from them is as a field that does not exist.)
  // (A list of one object: that object's fields alone.)
  const listed = page.objects.filter((def) => filter.objectId === undefined || def.id === filter.objectId);
  const elsewhere = new Map(
    objectsInView(caller, workspaceId, listed).flatMap((def) =>
      def.fields.filter(isReadElsewhere).map((f) => [f.name, f.type] as const),
    ),
  );
  const named = filter.fields.filter((field) => elsewhere.has(field.name));
  if (named.length > 0)
    throw rejected(
      named.map(({ name }) => ({
        query: `field.${name}`,
        code: 'not_filterable',
        message:
          elsewhere.get(name) === 'lookup'
            ? 'a lookup is read from the record it references: it cannot be filtered'
            : 'a rollup is filtered by a query (POST …/records/query), not a list',
      })),
    );
  if (isLimited(caller)) context.meter.hideRows();
  const limitsOf = limitsIn(caller, workspaceId);
  const shown = await withLookupValues(context, caller, page.records.slice(0, limit), page.objects);
  if (expand !== undefined) {
    const wrong = expandProblems(expand, objectsInView(caller, workspaceId, page.objects), () => ({ query: 'expand' }));
    if (wrong.length > 0) throw invalidQuery(wrong);
  }
  const items = pageOf(
    await withExpanded(
      context,
      caller,
      // The page's records are those the caller may read (SQL chose them): only their hidden fields go.
      isLimited(caller) ? shown.map((record) => withoutHidden(record, limitsOf(record.objectId).hidden)) : shown,
      expand,
    ),
  );
  const last = items.at(-1);
  const nextCursor =
    (page.records.length > items.length || page.sizeCut) && last !== undefined
      ? await signCursor(secret, last.id, scope)
      : null;
  return json({ items, nextCursor });
}

/** GET /workspaces/{workspaceId}/changes: every committed change of its records, in commit order. */
export async function listChanges(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  const given = queryOf(request.url);
  const query = parseFeedQuery(given.params);
  const problems = [...given.problems, ...(query.ok ? [] : query.problems)];
  if (!query.ok || problems.length > 0) return refuse(context, keyHash, workspaceId, problems, invalidQuery(problems));
  const secret = await secretOf(context);
  const scope = `changes/${workspaceId}`;
  if (query.value.start === 'latest') {
    const end = await context.lists.feedEnd(keyHash, workspaceId);
    member(end.caller, workspaceId, []);
    return json({ items: [], nextCursor: await signCursor(secret, end.seq, scope) });
  }
  const sent = query.value.after;
  const after = await caught(async () => (sent === undefined ? 0 : readCursor(secret, sent, scope, 'after')));
  if (!after.ok) return refuse(context, keyHash, workspaceId, [], after.error);
  const { caller, changes, horizon } = await context.lists.changes(
    keyHash,
    workspaceId,
    after.value,
    query.value.limit,
  );
  const reader = member(caller, workspaceId, []);
  if (isLimited(reader)) context.meter.hideRows();
  if (sent !== undefined && after.value < horizon) {
    throw new HttpError(410, {
      code: 'gone',
      title: 'Cursor too old',
      detail: 'Changes after this cursor were pruned (they are kept 7 days). Start again without `after`.',
      errors: [{ query: 'after', code: 'gone', message: 'changes after this position are no longer kept' }],
    });
  }
  const limitsOf = limitsIn(reader, workspaceId);
  const hiddenIn = (change: (typeof changes)[number]): ReadonlySet<string> | undefined =>
    change.objectId === undefined ? undefined : limitsOf(change.objectId).hidden;
  const items = pageOf(
    await Promise.all(
      changes.map(async (change) => feedItem(change, await signCursor(secret, change.seq, scope), hiddenIn(change))),
    ),
  );
  const nextCursor = items.at(-1)?.cursor ?? (await signCursor(secret, Math.max(after.value, horizon), scope));
  return json({ items, nextCursor });
}

/** GET /workspaces/{workspaceId}/objects: the definitions of its records' objects, for its members, by id. */
export async function listWorkspaceObjects(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  const sent = queryOf(request.url);
  const query = parsePageQuery(sent.params);
  const problems = [...sent.problems, ...(query.ok ? [] : query.problems)];
  if (!query.ok || problems.length > 0) return refuse(context, keyHash, workspaceId, problems, invalidQuery(problems));
  const { limit, cursor } = query.value;
  const secret = await secretOf(context);
  const scope = `objects/${workspaceId}`;
  // Sealed: the last object a page read may be one the caller's role does not list.
  const after = await caught(async () =>
    cursor === undefined ? 0 : Number((await readPosition(secret, cursor, scope, 'cursor'))[0]),
  );
  if (!after.ok) return refuse(context, keyHash, workspaceId, [], after.error);
  const { caller, objects } = await context.lists.objects(keyHash, workspaceId, after.value, limit + 1);
  const reader = member(caller, workspaceId, []);
  // A page of objects the role does not list may be short, or empty, and still have a next page.
  const read = objects.slice(0, limit);
  const items = objectsInView(reader, workspaceId, read);
  const last = read.at(-1);
  const nextCursor = objects.length > limit && last !== undefined ? await signPosition(secret, [last.id], scope) : null;
  return json({ items: items.map(definitionOut), nextCursor });
}

export { MAX_PAGE_BYTES };

/** The leading items whose JSON fits MAX_PAGE_BYTES together (at least one). */
export function pageOf<T>(items: readonly T[]): T[] {
  let bytes = 64;
  const page: T[] = [];
  for (const item of items) {
    bytes += new TextEncoder().encode(JSON.stringify(item)).byteLength + 1;
    if (page.length > 0 && bytes > MAX_PAGE_BYTES) break;
    page.push(item);
  }
  return page;
}

/** GET /me: the caller, whether they administer their tenant, and their workspaces with names, by id. */
export async function me(request: IRequest, context: Context): Promise<Response> {
  const profile = await context.store.profile(await keyHashOf(request));
  if (profile === undefined) throw unauthorized();
  return json(profile);
}
