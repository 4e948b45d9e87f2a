import { exports } from 'cloudflare:workers';
import { call, type Answer } from './helpers.ts';

/** A WebSocket on a workspace's live stream, as a client holds it: the items so far, and how it closed. */
export interface Socket {
  items: any[];
  closed: Promise<{ code: number; reason: string }>;
  socket: WebSocket;
}

/** Opens a workspace's live stream as a WebSocket; a refused one is the problem it answered. */
export async function open(workspaceId: number, auth: { key?: string; query?: string }): Promise<Socket | Answer> {
  const res = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live${auth.query ?? ''}`, {
    headers: { Upgrade: 'websocket', ...(auth.key === undefined ? {} : { Authorization: `Bearer ${auth.key}` }) },
  });
  if (res.webSocket === null) {
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
  }
  const socket = res.webSocket;
  socket.accept();
  const items: any[] = [];
  socket.addEventListener('message', (event) => {
    if (event.data !== 'pong') items.push(JSON.parse(event.data as string));
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.addEventListener('close', (event) => resolve({ code: event.code, reason: event.reason })),
  );
  return { items, closed, socket };
}

/** Opens a workspace's live stream as a WebSocket that must open. */
export async function socket(workspaceId: number, auth: { key?: string; query?: string }): Promise<Socket> {
  const opened = await open(workspaceId, auth);
  if ('status' in opened) throw new Error(`live: ${opened.status} ${JSON.stringify(opened.body)}`);
  return opened;
}

/** Every item of the workspace's feed after `after` (else from its start), as `GET …/changes` shows them to `key`. */
export async function feedAfter(key: string, workspaceId: number, after?: string): Promise<any[]> {
  const items: any[] = [];
  for (let cursor = after; ;) {
    const from = cursor === undefined ? '' : `&after=${encodeURIComponent(cursor)}`;
    const page = await call('GET', `/workspaces/${workspaceId}/changes?limit=1000${from}`, { key });
    if (page.body.items.length === 0) return items;
    items.push(...page.body.items);
    cursor = page.body.nextCursor;
  }
}

/** The cursor after the workspace's newest change. */
export const latest = async (key: string, workspaceId: number): Promise<string> =>
  (await call('GET', `/workspaces/${workspaceId}/changes?start=latest`, { key })).body.nextCursor;
