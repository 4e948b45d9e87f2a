import { DurableObject } from 'cloudflare:workers';

interface Env {
  DB: D1Database;
  HUB: DurableObjectNamespace<Hub>;
}

/** Holds every socket; sends each write's row to all of them. */
export class Hub extends DurableObject<Env> {
  override fetch(): Response {
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server);
    return new Response(null, { status: 101, webSocket: client });
  }

  broadcast(json: string): void {
    for (const socket of this.ctx.getWebSockets()) socket.send(json);
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const hub = env.HUB.getByName('hub');
    if (url.pathname === '/health') return Response.json({ status: 'ok' });
    if (url.pathname === '/live') return hub.fetch(request);
    if (url.pathname === '/write' && request.method === 'POST') {
      await env.DB.prepare('CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, label TEXT)').run();
      const row = await env.DB.prepare('INSERT INTO rows (label) VALUES (?) RETURNING id')
        .bind(await request.text())
        .first<{ id: number }>();
      const id = row?.id ?? 0;
      await hub.broadcast(JSON.stringify({ type: 'created', recordId: id }));
      return Response.json({ id });
    }
    return new Response('not found', { status: 404 });
  },
} satisfies ExportedHandler<Env>;
