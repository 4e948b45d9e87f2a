import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import type { Caller } from '../domain/access.ts';
import { parseLiveQuery } from '../domain/list-query.ts';
import { tenantOfId } from '../domain/tenant.ts';
import { keyHashOf } from '../http/auth.ts';
import { cursorKey, readCursor } from '../http/cursor.ts';
import { cursorGone, HttpError, invalidQuery, notFound, unauthorized } from '../http/errors.ts';
import { pathIds, tenantPathIds } from '../http/params.ts';
import { queryOf } from '../http/query.ts';
import { json } from '../http/respond.ts';
import { LIVE_HEADERS, MAX_STREAMS_PER_KEY, TICKET } from '../domain/live.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import { Lists } from '../storage/lists.ts';
import { databaseFor } from '../tenancy/routes.ts';

/**
 * A workspace's live stream. The Worker checks the subscriber as the feed would (401, a bad query
 * 400, not a member 404, a forged cursor 400, a pruned one 410), then hands the connection to the
 * workspace's live object, which holds it from then on.
 */

const ticketRefused = (): HttpError =>
  new HttpError(401, {
    code: 'unauthorized',
    title: 'Ticket not accepted',
    detail: 'A ticket is good for one stream of its workspace, within 60 s of being issued. Ask for a new one.',
    errors: [{ query: 'ticket', code: 'invalid_ticket', message: 'used, expired or not issued for this workspace' }],
    headers: { 'WWW-Authenticate': 'Bearer' },
  });

const upgradeRequired = (): HttpError =>
  new HttpError(426, {
    code: 'upgrade_required',
    detail: 'Open it as a WebSocket (Upgrade: websocket) or as Server-Sent Events (Accept: text/event-stream).',
    headers: { Upgrade: 'websocket' },
  });

/**
 * The lists of a workspace's tenant, where a ticket (not the request's key) says who calls. A text
 * that is no ticket, or a workspace of no tenant, is refused before any object is asked.
 */
async function listsOf(context: Context, workspaceId: number, ticket: string): Promise<Lists> {
  const db = TICKET.test(ticket) ? await databaseFor(context.env, tenantOfId(workspaceId)) : undefined;
  if (db === undefined) throw ticketRefused();
  return new Lists(db, context.meter, tenantOfId(workspaceId));
}

const tooManyStreams = (): HttpError =>
  new HttpError(429, {
    code: 'rate_limited',
    title: 'Too many live streams',
    detail: `A key holds at most ${MAX_STREAMS_PER_KEY} live streams of a workspace at once; close one first.`,
  });

function member(caller: Caller | undefined, workspaceId: number): void {
  if (caller === undefined) throw unauthorized();
  if (!caller.roles.has(workspaceId)) throw notFound('Workspace');
}

/** GET /workspaces/{workspaceId}/live: the workspace's feed items as they commit, over a WebSocket or as events. */
export async function openLive(request: IRequest, context: Context): Promise<Response> {
  const sent = queryOf(request.url);
  const query = parseLiveQuery(sent.params);
  const ticket = query.ok ? query.value.ticket : undefined;
  const byKey = request.headers.has('Authorization') || ticket === undefined;
  // A ticket's workspace names its tenant; a key's tenant is the one the request was routed to.
  const { workspaceId } = byKey
    ? tenantPathIds(request.params, context.tenant.id, 'workspaceId')
    : pathIds(request.params, 'workspaceId');
  const live = context.env.LIVE.getByName(String(workspaceId));
  const lists = byKey ? context.lists : await listsOf(context, workspaceId, ticket as string);
  // A ticket is only looked at here; the object uses it up as it takes the stream.
  const keyHash = byKey ? await keyHashOf(request) : await live.peek(ticket as string);
  if (keyHash === undefined) throw ticketRefused();
  const end = await lists.feedEnd(keyHash, workspaceId);
  const problems = [...sent.problems, ...(query.ok ? [] : query.problems)];
  member(end.caller, workspaceId);
  if (!query.ok || problems.length > 0) throw invalidQuery(problems);
  const socket = request.headers.get('Upgrade')?.toLowerCase() === 'websocket';
  if (!socket && !(request.headers.get('Accept') ?? '').includes('text/event-stream')) throw upgradeRequired();
  const secret = await cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
  // An event stream reconnecting on its own sends the id of the last event it had.
  const after = query.value.after ?? request.headers.get('Last-Event-ID') ?? undefined;
  let seq = query.value.start === 'latest' ? end.seq : 0;
  if (after !== undefined) {
    seq = await readCursor(secret, after, `changes/${workspaceId}`, 'after');
    if (seq < end.horizon) throw cursorGone({ query: 'after', code: 'gone', message: 'no longer kept' });
  }
  const handed = await live.fetch('https://live/', {
    headers: {
      ...(socket ? { Upgrade: 'websocket' } : { Accept: 'text/event-stream' }),
      [LIVE_HEADERS.workspace]: String(workspaceId),
      [LIVE_HEADERS.keyHash]: keyHash,
      [LIVE_HEADERS.after]: String(seq),
      ...(byKey ? {} : { [LIVE_HEADERS.ticket]: ticket as string }),
    },
  });
  if (handed.status === 401) throw ticketRefused();
  if (handed.status === 429) throw tooManyStreams();
  if (handed.webSocket !== null) return new Response(null, { status: 101, webSocket: handed.webSocket });
  return new Response(handed.body, { status: handed.status, headers: new Headers(handed.headers) });
}

/** POST /workspaces/{workspaceId}/live/tickets: a single-use ticket, for where no key header can be sent. */
export async function createLiveTicket(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  member((await context.lists.feedEnd(keyHash, workspaceId)).caller, workspaceId);
  const issued = await context.env.LIVE.getByName(String(workspaceId)).issue(keyHash);
  return json({ ticket: issued.ticket, expiresAt: new Date(issued.expiresAt).toISOString() }, 201);
}
