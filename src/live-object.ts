import { DurableObject } from 'cloudflare:workers';
import type { Env } from './env.ts';
import { limitsIn, type Caller } from './domain/access.ts';
import { feedItem, type ChangeRow } from './domain/feed-item.ts';
import {
  CLOSE,
  closeReason,
  LIVE_HEADERS,
  MAX_BUFFERED_BYTES,
  sseClose,
  sseEvent,
  TICKET_MS,
  type CloseCode,
} from './domain/live.ts';
import { tenantOfId } from './domain/tenant.ts';
import { base64url, sha256Hex } from './http/auth.ts';
import { cursorKey, signCursor } from './http/cursor.ts';
import { storedCursorKey } from './storage/cursor-key.ts';
import { Lists } from './storage/lists.ts';
import { Meter } from './storage/meter.ts';
import { databaseFor } from './tenancy/routes.ts';

/** What the object keeps of a stream (a WebSocket's attachment): whose key it runs under, and how far it got. */
interface Position {
  keyHash: string;
  /** The feed position of the last change this stream has had (or was not shown). */
  seq: number;
}

/** One open stream, WebSocket or event stream alike. */
interface Stream extends Position {
  /** Sends one item; false when the consumer has fallen too far behind (the stream is then closed). */
  send(cursor: string, json: string): boolean;
  close(code: CloseCode, reason: string): void;
  /** Keeps the position where it survives the object's sleep. */
  save(): void;
}

/** While streams are open, their keys are checked and the feed read at least this often. */
const CHECK_MS = 1_000;
/** Feed changes read per round trip. */
const PAGE = 100;
/** One run of deliveries takes at most this long before it lets others in and goes on. */
const RUN_MS = 2_000;

/**
 * One object per workspace holds its live streams: WebSockets through the Hibernation API (an
 * idle socket keeps no object awake between checks), event streams in memory. It reads the
 * workspace's feed from the streams' own positions, so a lost wake-up only delays an item until
 * the next check. Streams whose keys are built-in members share one read of the feed; a key whose
 * role limits it reads the feed as that role sees it (its own hidden fields taken out). Runs never
 * overlap: each item goes to a stream once, in commit order.
 */
export class LiveObject extends DurableObject<Env> {
  /** The event streams, by their writer. */
  private readonly events = new Map<WritableStreamDefaultWriter<Uint8Array>, Position>();
  /** The callers of the streams' keys, as last checked, and when. */
  private callers = new Map<string, Caller | undefined>();
  private checkedAt = 0;
  private running: Promise<void> | undefined;
  private again = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // A client's "ping" is answered without waking the object; anything else a client sends is ignored.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
  }

  /** A subscriber the Worker has checked (a member, a cursor still kept): its stream starts here. */
  override async fetch(request: Request): Promise<Response> {
    const workspaceId = Number(request.headers.get(LIVE_HEADERS.workspace));
    const position = {
      keyHash: request.headers.get(LIVE_HEADERS.keyHash) ?? '',
      seq: Number(request.headers.get(LIVE_HEADERS.after)),
    };
    await this.ctx.storage.put('workspace', workspaceId);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + CHECK_MS);
    this.checkedAt = 0;
    if (request.headers.get('Upgrade')?.toLowerCase() === 'websocket') {
      const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
      this.ctx.acceptWebSocket(server);
      server.serializeAttachment(position);
      this.run();
      return new Response(null, { status: 101, webSocket: client });
    }
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(
      undefined,
      new ByteLengthQueuingStrategy({ highWaterMark: MAX_BUFFERED_BYTES }),
    );
    const writer = writable.getWriter();
    this.events.set(writer, position);
    this.run();
    return new Response(readable, {
      headers: { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store' },
    });
  }

  /** A change may have committed: read the feed now (nothing to do without streams). */
  async wake(workspaceId: number): Promise<void> {
    if (this.ctx.getWebSockets().length === 0 && this.events.size === 0) return;
    if ((await this.ctx.storage.get<number>('workspace')) === undefined)
      await this.ctx.storage.put('workspace', workspaceId);
    this.run();
  }

  /** A single-use ticket that stands for `keyHash` on this workspace's stream for TICKET_MS. */
  async issue(keyHash: string): Promise<{ ticket: string; expiresAt: number }> {
    const ticket = `lt_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
    const expiresAt = Date.now() + TICKET_MS;
    await this.ctx.storage.put(`ticket:${await sha256Hex(ticket)}`, { keyHash, expiresAt });
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(expiresAt);
    return { ticket, expiresAt };
  }

  /** The key a ticket stands for, once: undefined for a ticket used, expired or never issued here. */
  async redeem(ticket: string): Promise<string | undefined> {
    const key = `ticket:${await sha256Hex(ticket)}`;
    const held = await this.ctx.storage.get<{ keyHash: string; expiresAt: number }>(key);
    if (held === undefined) return undefined;
    await this.ctx.storage.delete(key);
    return held.expiresAt > Date.now() ? held.keyHash : undefined;
  }

  override async alarm(): Promise<void> {
    const nextExpiry = await this.forgetExpiredTickets();
    this.checkedAt = 0;
    this.run();
    await this.running;
    if (this.ctx.getWebSockets().length > 0 || this.events.size > 0)
      await this.ctx.storage.setAlarm(Date.now() + CHECK_MS);
    else if (nextExpiry !== undefined) await this.ctx.storage.setAlarm(nextExpiry);
  }

  // A closing client is answered by the runtime; nothing it sends is read.
  override webSocketMessage(): void {}

  /** Runs deliveries until nothing more is due; a call during a run asks for one more. */
  private run(): void {
    this.again = true;
    if (this.running !== undefined) return;
    this.running = (async () => {
      while (this.again) {
        this.again = false;
        try {
          await this.deliver();
        } catch (error) {
          // D1 out of reach, say: the positions are where they were; the next check tries again.
          console.error(JSON.stringify({ message: 'live delivery failed', error: String(error) }));
        }
      }
    })().finally(() => {
      this.running = undefined;
    });
    this.ctx.waitUntil(this.running);
  }

  private async deliver(): Promise<void> {
    let streams = this.streams();
    const workspaceId = await this.ctx.storage.get<number>('workspace');
    if (streams.length === 0 || workspaceId === undefined) return;
    const tenant = tenantOfId(workspaceId);
    const db = await databaseFor(this.env, tenant);
    if (db === undefined) {
      for (const stream of streams) stream.close(CLOSE.forbidden, 'the workspace is gone');
      return;
    }
    const lists = new Lists(db, new Meter(), tenant);
    if (Date.now() - this.checkedAt >= CHECK_MS || streams.some((stream) => !this.callers.has(stream.keyHash))) {
      this.checkedAt = Date.now();
      this.callers = await lists.callers([...new Set(streams.map((stream) => stream.keyHash))]);
    }
    streams = streams.filter((stream) => {
      const caller = this.callers.get(stream.keyHash);
      if (caller === undefined) stream.close(CLOSE.revoked, 'the key was revoked');
      else if (!caller.roles.has(workspaceId)) stream.close(CLOSE.forbidden, 'no longer a member');
      return caller?.roles.has(workspaceId) === true;
    });
    const grantOf = (stream: Stream) => this.callers.get(stream.keyHash)?.roles.get(workspaceId);
    const shared = streams.filter((stream) => typeof grantOf(stream) === 'string');
    const limited = new Map<string, Stream[]>();
    for (const stream of streams)
      if (typeof grantOf(stream) !== 'string')
        limited.set(stream.keyHash, [...(limited.get(stream.keyHash) ?? []), stream]);
    const secret = await cursorKey(this.env.CURSOR_SECRET, () => storedCursorKey(this.env.DB, new Meter()));
    const send = async (group: Stream[], hidden: (change: ChangeRow) => ReadonlySet<string> | undefined) => {
      const [first] = group;
      if (first !== undefined) await this.send(lists, workspaceId, secret, first.keyHash, group, hidden);
    };
    await send(shared, () => undefined);
    for (const [keyHash, group] of limited) {
      const limitsOf = limitsIn(this.callers.get(keyHash) as Caller, workspaceId);
      await send(group, (change) => (change.objectId === undefined ? undefined : limitsOf(change.objectId).hidden));
    }
  }

  /** The feed after the group's positions, as `keyHash` may read it, to each stream that has not had it. */
  private async send(
    lists: Lists,
    workspaceId: number,
    secret: string,
    keyHash: string,
    group: Stream[],
    hidden: (change: ChangeRow) => ReadonlySet<string> | undefined,
  ): Promise<void> {
    const started = Date.now();
    let open = group;
    while (open.length > 0) {
      const from = Math.min(...open.map((stream) => stream.seq));
      const { changes } = await lists.changes(keyHash, workspaceId, from, PAGE);
      const last = changes.at(-1);
      if (last === undefined) return;
      for (const change of changes) {
        const cursor = await signCursor(secret, change.seq, `changes/${workspaceId}`);
        const json = JSON.stringify(feedItem(change, cursor, hidden(change)));
        open = open.filter((stream) => {
          if (stream.seq >= change.seq) return true;
          stream.seq = change.seq;
          return stream.send(cursor, json);
        });
      }
      for (const stream of open) {
        stream.seq = Math.max(stream.seq, last.seq);
        stream.save();
      }
      if (Date.now() - started > RUN_MS) {
        this.again = true;
        return;
      }
    }
  }

  /** Every open stream, WebSockets (from the runtime, after a sleep too) and event streams. */
  private streams(): Stream[] {
    const sockets = this.ctx.getWebSockets().flatMap((socket): Stream[] => {
      const position = socket.deserializeAttachment() as Position | null;
      if (position === null || socket.readyState !== WebSocket.OPEN) return [];
      const stream: Stream = {
        ...position,
        send: (cursor, json) => {
          socket.send(json);
          // A runtime that does not count what a socket has not sent yet leaves it undefined.
          const buffered = socket.bufferedAmount as number | undefined;
          if (buffered === undefined || buffered <= MAX_BUFFERED_BYTES) return true;
          stream.close(CLOSE.tooSlow, cursor);
          return false;
        },
        close: (code, reason) => socket.close(code, closeReason(reason)),
        save: () => socket.serializeAttachment({ keyHash: stream.keyHash, seq: stream.seq }),
      };
      return [stream];
    });
    const events = [...this.events].map(([writer, position]): Stream => {
      const write = (text: string) => {
        writer.write(new TextEncoder().encode(text)).catch(() => this.events.delete(writer));
      };
      const stream: Stream = {
        ...position,
        send: (cursor, json) => {
          write(sseEvent(cursor, json));
          if ((writer.desiredSize ?? 0) >= 0) return true;
          stream.close(CLOSE.tooSlow, cursor);
          return false;
        },
        close: (code, reason) => {
          this.events.delete(writer);
          write(sseClose(code, reason));
          writer.close().catch(() => undefined);
        },
        save: () => this.events.set(writer, { keyHash: stream.keyHash, seq: stream.seq }),
      };
      return stream;
    });
    return [...sockets, ...events];
  }

  /** Removes the tickets past their time; the time the next one left expires, if any. */
  private async forgetExpiredTickets(): Promise<number | undefined> {
    const now = Date.now();
    const tickets = [...(await this.ctx.storage.list<{ expiresAt: number }>({ prefix: 'ticket:' }))];
    const expired = tickets.filter(([, held]) => held.expiresAt <= now).map(([key]) => key);
    for (let i = 0; i < expired.length; i += 128) await this.ctx.storage.delete(expired.slice(i, i + 128));
    const left = tickets.filter(([, held]) => held.expiresAt > now).map(([, held]) => held.expiresAt);
    return left.length === 0 ? undefined : Math.min(...left);
  }
}
