import { createServer, type Server } from 'node:http';
import type { Received } from '../webhook-log.ts';

/**
 * A real webhook receiver for tests: a Node HTTP server on a free port. Each path
 * `/hook/<name>` is one receiver that logs every delivery it gets (headers, raw body, time of
 * receipt) and answers as told: 204, or 500 until a given time, or 500 for good.
 * `POST /control/<name>` `{ "failUntil": epochMs }` or `{ "failAlways": true }` or `{}` (answer
 * 204 again) sets how; `GET /log/<name>` returns what it got. Tests inside the Workers runtime
 * reach it over the network, like the service's own deliveries.
 */

interface Behaviour {
  failUntil?: number;
  failAlways?: boolean;
  delayMs?: number;
}

export interface Receiver {
  url: string;
  close: () => Promise<void>;
  logs: Map<string, Received[]>;
}

export async function startReceiver(): Promise<Receiver> {
  const logs = new Map<string, Received[]>();
  const behaviours = new Map<string, Behaviour>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const [, kind, name = ''] = (request.url ?? '').split('/');
      if (kind === 'control' && request.method === 'POST') {
        behaviours.set(name, JSON.parse(body === '' ? '{}' : body) as Behaviour);
        response.writeHead(204).end();
        return;
      }
      if (kind === 'log' && request.method === 'GET') {
        response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(logs.get(name) ?? []));
        return;
      }
      if (kind !== 'hook' || request.method !== 'POST') {
        response.writeHead(404).end();
        return;
      }
      const behaviour = behaviours.get(name) ?? {};
      const failing = behaviour.failAlways === true || (behaviour.failUntil ?? 0) > Date.now();
      const status = failing ? 500 : 204;
      const header = (h: string): string => String(request.headers[h] ?? '');
      const entry: Received = {
        id: header('webhook-id'),
        timestamp: header('webhook-timestamp'),
        signature: header('webhook-signature'),
        body,
        at: Date.now(),
        status,
      };
      logs.set(name, [...(logs.get(name) ?? []), entry]);
      const answer = () => response.writeHead(status).end(failing ? 'receiver down' : undefined);
      if (behaviour.delayMs !== undefined) setTimeout(answer, behaviour.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('receiver has no port');
  server.unref();
  return {
    url: `http://127.0.0.1:${address.port}`,
    logs,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
