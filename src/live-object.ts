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
  /** Keeps the position where it survives the object's sleep (a WebSocket's attachment). */
  save(): void;
  /** Whether the stream is still open. */
  open(): boolean;
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
  /** The open streams: WebSockets (rebuilt from their attachments after a sleep) and event streams. */
  private readonly held = new Map<WebSocket | WritableStreamDefaultWriter<Uint8Array>, Stream>();
  /** The callers of the streams' keys, as last checked, and when. */
  private callers = new Map<string, Caller | undefined>();
  private checkedAt = 0;
  private running: Promise<void> | undefined;
  private again = false;
  /** The workspace whose streams these are, once known (kept in storage for an object woken by its alarm). */
  private workspaceId: number | undefined;
  /** Whether the WebSockets the runtime kept through a sleep were taken back into `held`. */
  private restored = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // A client's "ping" is answered without waking the object; anything else a client sends is ignored.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
    ctx.storage.sql.exec(
      'CREATE TABLE IF NOT EXISTS tickets (hash TEXT PRIMARY KEY, key_hash TEXT NOT NULL, expires_at INTEGER NOT NULL)',
    );
  }

  /** A subscriber the Worker has checked (a member, a cursor still kept): its stream starts here. */
  override async fetch(request: Request): Promise<Response> {
    const workspaceId = Number(request.headers.get(LIVE_HEADERS.workspace));
    const position = {
      keyHash: request.headers.get(LIVE_HEADERS.keyHash) ?? '',
      seq: Number(request.headers.get(LIVE_HEADERS.after)),
    };
    await this.remember(workspaceId);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + CHECK_MS);
    this.checkedAt = 0;
    if (request.headers.get('Upgrade')?.toLowerCase() === 'websocket') {
      const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
      this.ctx.acceptWebSocket(server);
      server.serializeAttachment(position);
      this.held.set(server, this.socketStream(server, position));
      this.run();
      return new Response(null, { status: 101, webSocket: client });
    }
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(
      undefined,
      new ByteLengthQueuingStrategy({ highWaterMark: MAX_BUFFERED_BYTES }),
    );
    const writer = writable.getWriter();
    this.held.set(writer, this.eventStream(writer, position));
    this.run();
    return new Response(readable, {
      headers: { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store' },
    });
  }

  /** A change may have committed: read the feed now (nothing to do without streams). */
  async wake(workspaceId: number): Promise<void> {
    if (this.streams().length === 0) return;
    await this.remember(workspaceId);
    this.run();
  }

  private async remember(workspaceId: number): Promise<void> {
    if (this.workspaceId === workspaceId) return;
    this.workspaceId = workspaceId;
    await this.ctx.storage.put('workspace', workspaceId);
  }

  /** A single-use ticket that stands for `keyHash` on this workspace's stream for TICKET_MS. */
  async issue(keyHash: string): Promise<{ ticket: string; expiresAt: number }> {
    const ticket = `lt_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
    const expiresAt = Date.now() + TICKET_MS;
    this.ctx.storage.sql.exec('INSERT INTO tickets VALUES (?, ?, ?)', await sha256Hex(ticket), keyHash, expiresAt);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(expiresAt);
    return { ticket, expiresAt };
  }

  /** The key a ticket stands for, once: undefined for a ticket used, expired or never issued here. */
  async redeem(ticket: string): Promise<string | undefined> {
    const [held] = this.ctx.storage.sql
      .exec<{ key_hash: string; expires_at: number }>(
        'DELETE FROM tickets WHERE hash = ? RETURNING key_hash, expires_at',
        await sha256Hex(ticket),
      )
      .toArray();
    return held !== undefined && held.expires_at > Date.now() ? held.key_hash : undefined;
  }

  override async alarm(): Promise<void> {
    const nextExpiry = this.forgetExpiredTickets();
    this.checkedAt = 0;
    this.run();
    await this.running;
    const streams = this.streams();
    // Once a second, not on every item: the object sleeps only after quiet seconds, never mid-run.
    for (const stream of streams) stream.save();
    if (streams.length > 0) await this.ctx.storage.setAlarm(Date.now() + CHECK_MS);
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
    this.workspaceId ??= await this.ctx.storage.get<number>('workspace');
    const workspaceId = this.workspaceId;
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
      for (const stream of open) stream.seq = Math.max(stream.seq, last.seq);
      if (Date.now() - started > RUN_MS) {
        this.again = true;
        return;
      }
    }
  }

  /** Every open stream: the WebSockets the runtime holds (after a sleep too) and the event streams. */
  private streams(): Stream[] {
    if (!this.restored) {
      this.restored = true;
      for (const socket of this.ctx.getWebSockets())
        if (!this.held.has(socket)) {
          const position = socket.deserializeAttachment() as Position | null;
          if (position !== null) this.held.set(socket, this.socketStream(socket, position));
        }
    }
    for (const [key, stream] of this.held) if (!stream.open()) this.held.delete(key);
    return [...this.held.values()];
  }

  private socketStream(socket: WebSocket, position: Position): Stream {
    let saved = position.seq;
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
      save: () => {
        if (stream.seq === saved) return;
        socket.serializeAttachment({ keyHash: stream.keyHash, seq: stream.seq });
        saved = stream.seq;
      },
      open: () => socket.readyState === WebSocket.OPEN,
    };
    return stream;
  }

  private eventStream(writer: WritableStreamDefaultWriter<Uint8Array>, position: Position): Stream {
    let open = true;
    const write = (text: string) => {
      writer.write(new TextEncoder().encode(text)).catch(() => (open = false));
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
        open = false;
        write(sseClose(code, reason));
        writer.close().catch(() => undefined);
      },
      // An event stream does not outlive the object's memory: nothing to keep.
      save: () => undefined,
      open: () => open,
    };
    return stream;
  }

  /** Removes the tickets past their time; the time the next one left expires, if any. */
  private forgetExpiredTickets(): number | undefined {
    const sql = this.ctx.storage.sql;
    sql.exec('DELETE FROM tickets WHERE expires_at <= ?', Date.now());
    return sql.exec<{ next: number | null }>('SELECT min(expires_at) AS next FROM tickets').one().next ?? undefined;
  }
}
