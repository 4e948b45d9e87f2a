import { DurableObject } from 'cloudflare:workers';
import type { Env } from './env.ts';
import { limitsIn, recordAccess, type Caller } from './domain/access.ts';
import { feedItem } from './domain/feed-item.ts';
import {
  CLOSE,
  closeReason,
  LIVE_HEADERS,
  MAX_BUFFERED_BYTES,
  MAX_STREAMS_PER_KEY,
  sseClose,
  sseEvent,
  TICKET_MS,
  type CloseCode,
} from './domain/live.ts';
import { tenantOfId } from './domain/tenant.ts';
import { base64url, sha256Hex } from './http/auth.ts';
import { cursorKey, signCursor } from './http/cursor.ts';
import { storedCursorKey } from './storage/cursor-key.ts';
import { Lists, type LiveChange } from './storage/lists.ts';
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
  /** The cursor of the last item sent: where a stream closed for being slow resumes. */
  cursor: string;
  send(json: string): void;
  close(code: CloseCode, reason: string): void;
  /** More than MAX_BUFFERED_BYTES sent and not yet taken (where the runtime says so). */
  behind(): boolean;
  /** Settles once the consumer has taken enough to be no longer behind. */
  drained(): Promise<void>;
  /** Keeps the position where it survives the object's sleep (a WebSocket's attachment). */
  save(): void;
  open(): boolean;
}

/** While streams are open, their keys are checked and the feed read at least this often. */
const CHECK_MS = 1_000;
/** Feed changes read per round trip. */
const PAGE = 100;
/** One run of deliveries takes at most this long before it lets others in and goes on. */
const RUN_MS = 2_000;
/** How long a consumer behind is given to catch up before its stream is closed. */
const DRAIN_MS = 1_000;

/**
 * One object per workspace holds its live streams: WebSockets through the Hibernation API, event
 * streams in memory. Each run reads, in one transaction, the callers of the streams' keys as they
 * are now and the workspace's feed after the streams' lowest position; each change goes to each
 * stream whose key may read it now (as `GET …/changes` would show it, hidden fields taken out), in
 * feed order, once. A key revoked or a membership removed closes its streams before anything more
 * is sent. A lost wake-up only delays an item until the next check, a second at most.
 */
export class LiveObject extends DurableObject<Env> {
  /** The open streams: WebSockets (taken back from the runtime after a sleep) and event streams. */
  private readonly held = new Map<WebSocket | WritableStreamDefaultWriter<Uint8Array>, Stream>();
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
  }

  /**
   * A subscriber the Worker has checked (a member, a cursor still kept): its stream starts here. A
   * ticket, if it came with one, is used up now (401 if another request used it first); a key with
   * MAX_STREAMS_PER_KEY streams open here gets 429.
   */
  override async fetch(request: Request): Promise<Response> {
    const workspaceId = Number(request.headers.get(LIVE_HEADERS.workspace));
    const position = {
      keyHash: request.headers.get(LIVE_HEADERS.keyHash) ?? '',
      seq: Number(request.headers.get(LIVE_HEADERS.after)),
    };
    const ticket = request.headers.get(LIVE_HEADERS.ticket);
    if (ticket !== null && (await this.redeem(ticket)) !== position.keyHash) return new Response(null, { status: 401 });
    if (this.streams().filter((stream) => stream.keyHash === position.keyHash).length >= MAX_STREAMS_PER_KEY)
      return new Response(null, { status: 429 });
    await this.remember(workspaceId);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + CHECK_MS);
    if (request.headers.get('Upgrade')?.toLowerCase() === 'websocket') {
      const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
      this.ctx.acceptWebSocket(server);
      server.serializeAttachment(position);
      this.held.set(server, socketStream(server, position));
      this.run();
      return new Response(null, { status: 101, webSocket: client });
    }
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(
      undefined,
      new ByteLengthQueuingStrategy({ highWaterMark: MAX_BUFFERED_BYTES }),
    );
    const writer = writable.getWriter();
    this.held.set(writer, eventStream(writer, position));
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

  /** A single-use ticket that stands for `keyHash` on this workspace's stream for TICKET_MS. */
  async issue(keyHash: string): Promise<{ ticket: string; expiresAt: number }> {
    const ticket = `lt_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
    const expiresAt = Date.now() + TICKET_MS;
    const sql = this.ctx.storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS tickets (hash TEXT PRIMARY KEY, key_hash TEXT NOT NULL, expires_at INTEGER)');
    sql.exec('INSERT INTO tickets VALUES (?, ?, ?)', await sha256Hex(ticket), keyHash, expiresAt);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(expiresAt);
    return { ticket, expiresAt };
  }

  /** The key a ticket stands for, not using it up: undefined for one used, expired or never issued here. */
  async peek(ticket: string): Promise<string | undefined> {
    if (!this.hasTickets()) return undefined;
    const [held] = this.ctx.storage.sql
      .exec<{ key_hash: string }>(
        'SELECT key_hash FROM tickets WHERE hash = ? AND expires_at > ?',
        await sha256Hex(ticket),
        Date.now(),
      )
      .toArray();
    return held?.key_hash;
  }

  override async alarm(): Promise<void> {
    const nextExpiry = this.forgetExpiredTickets();
    this.run();
    await this.running;
    const streams = this.streams();
    // A comment line: an event stream whose client went away fails here and is let go.
    for (const stream of streams) stream.send('');
    if (streams.length > 0) await this.ctx.storage.setAlarm(Date.now() + CHECK_MS);
    else if (nextExpiry !== undefined) await this.ctx.storage.setAlarm(nextExpiry);
  }

  // A closing client is answered by the runtime; nothing it sends is read.
  override webSocketMessage(): void {}

  private async remember(workspaceId: number): Promise<void> {
    if (this.workspaceId === workspaceId) return;
    this.workspaceId = workspaceId;
    await this.ctx.storage.put('workspace', workspaceId);
  }

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
    this.workspaceId ??= await this.ctx.storage.get<number>('workspace');
    const workspaceId = this.workspaceId;
    if (workspaceId === undefined) return;
    const tenant = tenantOfId(workspaceId);
    const db = await databaseFor(this.env, tenant);
    if (db === undefined) {
      for (const stream of this.streams()) stream.close(CLOSE.forbidden, 'the workspace is gone');
      return;
    }
    const lists = new Lists(db, new Meter(), tenant);
    const secret = await cursorKey(this.env.CURSOR_SECRET, () => storedCursorKey(this.env.DB, new Meter()));
    const started = Date.now();
    for (;;) {
      const streams = await this.caughtUp(this.streams());
      if (streams.length === 0) return;
      const keys = [...new Set(streams.map((stream) => stream.keyHash))];
      const from = Math.min(...streams.map((stream) => stream.seq));
      const { callers, changes, more } = await lists.live(keys, workspaceId, from, PAGE);
      const allowed = streams.filter((stream) => {
        const caller = callers.get(stream.keyHash);
        if (caller === undefined) stream.close(CLOSE.revoked, 'the key was revoked');
        else if (!caller.roles.has(workspaceId)) stream.close(CLOSE.forbidden, 'no longer a member');
        return caller?.roles.has(workspaceId) === true;
      });
      const shown = itemsFor(callers, workspaceId);
      for (const change of changes) {
        const cursor = await signCursor(secret, change.seq, `changes/${workspaceId}`);
        const seen = shown(change, cursor);
        for (const stream of allowed) {
          if (stream.seq >= change.seq) continue;
          stream.seq = change.seq;
          const json = seen(stream.keyHash);
          if (json === undefined) continue;
          stream.cursor = cursor;
          stream.send(json);
        }
      }
      const last = changes.at(-1)?.seq ?? from;
      for (const stream of allowed) {
        stream.seq = Math.max(stream.seq, last);
        stream.save();
      }
      if (!more) return;
      if (Date.now() - started > RUN_MS) {
        this.again = true;
        return;
      }
    }
  }

  /**
   * The streams that keep up: one more than MAX_BUFFERED_BYTES behind is given DRAIN_MS to catch up,
   * then closed (4008) with the cursor of the last item it was sent.
   */
  private async caughtUp(streams: Stream[]): Promise<Stream[]> {
    const behind = streams.filter((stream) => stream.behind());
    if (behind.length === 0) return streams;
    await Promise.race([
      Promise.all(behind.map((stream) => stream.drained())),
      new Promise((resolve) => setTimeout(resolve, DRAIN_MS)),
    ]);
    for (const stream of behind) if (stream.behind()) stream.close(CLOSE.tooSlow, stream.cursor);
    return streams.filter((stream) => stream.open());
  }

  /** Every open stream: the WebSockets the runtime holds (after a sleep too) and the event streams. */
  private streams(): Stream[] {
    if (!this.restored) {
      this.restored = true;
      for (const socket of this.ctx.getWebSockets())
        if (!this.held.has(socket)) {
          const position = socket.deserializeAttachment() as Position | null;
          if (position !== null) this.held.set(socket, socketStream(socket, position));
        }
    }
    for (const [key, stream] of this.held) if (!stream.open()) this.held.delete(key);
    return [...this.held.values()];
  }

  private hasTickets(): boolean {
    return (
      this.ctx.storage.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'tickets'")
        .one().n > 0
    );
  }

  /** Uses a ticket up: the key it stood for, if it was still good. */
  private async redeem(ticket: string): Promise<string | undefined> {
    if (!this.hasTickets()) return undefined;
    const [held] = this.ctx.storage.sql
      .exec<{ key_hash: string; expires_at: number }>(
        'DELETE FROM tickets WHERE hash = ? RETURNING key_hash, expires_at',
        await sha256Hex(ticket),
      )
      .toArray();
    return held !== undefined && held.expires_at > Date.now() ? held.key_hash : undefined;
  }

  /** Removes the tickets past their time; the time the next one left expires, if any. */
  private forgetExpiredTickets(): number | undefined {
    if (!this.hasTickets()) return undefined;
    const sql = this.ctx.storage.sql;
    sql.exec('DELETE FROM tickets WHERE expires_at <= ?', Date.now());
    return sql.exec<{ next: number | null }>('SELECT min(expires_at) AS next FROM tickets').one().next ?? undefined;
  }
}

/**
 * How a change shows to each key: its item as that key's feed shows it, or undefined where the key's
 * grant in the workspace does not let it read the record. Worked out once per key and change.
 */
function itemsFor(callers: ReadonlyMap<string, Caller>, workspaceId: number) {
  const limits = new Map([...callers].map(([keyHash, caller]) => [keyHash, limitsIn(caller, workspaceId)]));
  return (change: LiveChange, cursor: string) => {
    const whole = new Map<string, string | undefined>();
    const place = { objectId: change.objectId ?? -1, ownedBy: change.ownedBy, sharedWorkspaceIds: [workspaceId] };
    return (keyHash: string): string | undefined => {
      if (whole.has(keyHash)) return whole.get(keyHash);
      const caller = callers.get(keyHash) as Caller;
      const hidden = change.objectId === undefined ? undefined : limits.get(keyHash)?.(change.objectId).hidden;
      const json = recordAccess(caller, place, workspaceId).read
        ? JSON.stringify(feedItem(change, cursor, hidden))
        : undefined;
      whole.set(keyHash, json);
      return json;
    };
  };
}

function socketStream(socket: WebSocket, position: Position): Stream {
  let saved = position.seq;
  const stream: Stream = {
    ...position,
    cursor: '',
    // An empty text is no item: a WebSocket is sent none.
    send: (json) => {
      if (json !== '') socket.send(json);
    },
    close: (code, reason) => socket.close(code, closeReason(reason)),
    // A runtime that does not count what a socket has not sent yet leaves `bufferedAmount` undefined.
    behind: () => ((socket.bufferedAmount as number | undefined) ?? 0) > MAX_BUFFERED_BYTES,
    drained: () => new Promise((resolve) => setTimeout(resolve, DRAIN_MS)),
    save: () => {
      if (stream.seq === saved) return;
      socket.serializeAttachment({ keyHash: stream.keyHash, seq: stream.seq });
      saved = stream.seq;
    },
    open: () => socket.readyState === WebSocket.OPEN,
  };
  return stream;
}

function eventStream(writer: WritableStreamDefaultWriter<Uint8Array>, position: Position): Stream {
  let open = true;
  const encoder = new TextEncoder();
  const write = (text: string) => {
    writer.write(encoder.encode(text)).catch(() => (open = false));
  };
  const stream: Stream = {
    ...position,
    cursor: '',
    // An empty text is a comment line: it keeps proxies from closing a quiet stream.
    send: (json) => write(json === '' ? ':\n\n' : sseEvent(stream.cursor, json)),
    close: (code, reason) => {
      open = false;
      write(sseClose(code, reason));
      writer.close().catch(() => undefined);
    },
    behind: () => (writer.desiredSize ?? 0) < 0,
    drained: () => writer.ready.then(() => undefined),
    // An event stream does not outlive the object's memory: nothing to keep.
    save: () => undefined,
    open: () => open,
  };
  return stream;
}
