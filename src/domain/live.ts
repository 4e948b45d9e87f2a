/**
 * A workspace's live stream: the feed's items pushed as they commit, over a WebSocket or as
 * Server-Sent Events. What ends a stream, and how an event is framed, are decided here.
 */

/** Why the service ends a stream: the close code a WebSocket gets (an event stream gets it as its last event). */
export const CLOSE = {
  /** The key behind the stream was revoked, or its user deleted. */
  revoked: 4401,
  /** The key's user is no longer a member of the workspace (or the workspace is gone). */
  forbidden: 4403,
  /** The consumer did not keep up: the reason is the cursor of the last item sent, to resume after. */
  tooSlow: 4008,
} as const;

export type CloseCode = (typeof CLOSE)[keyof typeof CLOSE];

/** The headers by which the Worker hands an accepted subscriber to the workspace's live object. */
export const LIVE_HEADERS = {
  workspace: 'X-Live-Workspace',
  keyHash: 'X-Live-Key-Hash',
  after: 'X-Live-After',
  /** A ticket the stream was opened with: the object uses it up as it takes the stream. */
  ticket: 'X-Live-Ticket',
};

/** Streams one key may hold open on one workspace at once. */
export const MAX_STREAMS_PER_KEY = 100;

/** What a ticket looks like: anything else is refused without asking the object. */
export const TICKET = /^lt_[A-Za-z0-9_-]{43}$/;

/** A ticket stands for its key this long, once. */
export const TICKET_MS = 60_000;

/** Bytes sent but not yet taken by a consumer before it counts as too slow. */
export const MAX_BUFFERED_BYTES = 1 << 20;

/** One feed item as a Server-Sent Event: its cursor as the event's id (what `Last-Event-ID` sends back). */
export function sseEvent(cursor: string, json: string): string {
  return `id: ${cursor}\ndata: ${json}\n\n`;
}

/** The last event of a stream the service ends: the code a WebSocket would get, and the reason. */
export function sseClose(code: CloseCode, reason: string): string {
  return `event: close\ndata: ${JSON.stringify({ code, reason })}\n\n`;
}

/** A WebSocket's close reason is at most 123 bytes: a longer one is cut at a character boundary. */
export function closeReason(text: string): string {
  const encoder = new TextEncoder();
  let reason = text;
  while (encoder.encode(reason).byteLength > 123) reason = [...reason].slice(0, -1).join('');
  return reason;
}
