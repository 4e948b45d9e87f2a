/// <reference types="node" />
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { forgetSubscriptions } from '../../src/push/wake.ts';
import { IsolateCache, isolateCache } from '../../src/storage/isolate-cache.ts';
import { byName } from '../feed-fold.ts';
import type { Cluster } from './cluster.ts';
import type { World } from './world.ts';

/** What the simulations share: the schema, a fresh isolate, a client over the cluster, a record's comparison. */

export function migrations(): string[] {
  const dir = fileURLToPath(new URL('../../migrations/', import.meta.url).href);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => readFileSync(`${dir}${file}`, 'utf8'));
}

/** Every run starts with an isolate that remembers nothing. */
export function resetIsolate(workspaceId: number): void {
  Object.assign(isolateCache, new IsolateCache());
  forgetSubscriptions(workspaceId);
}

export interface Answer {
  status: number;
  text: string;
  body: any;
  code: string | undefined;
  retryAfter: boolean;
}

/**
 * HTTP over the cluster, driven by the world's clock: a request never answered is a failure of
 * the run. A body is JSON, or bytes sent as they are (with the headers the caller gives).
 */
export function client(world: World, cluster: Cluster) {
  const send = async (
    method: string,
    path: string,
    token: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer> => {
    const raw = body instanceof Uint8Array;
    const response = await cluster.fetch(
      new Request(`https://sim.local${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(body === undefined || raw ? {} : { 'Content-Type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: raw ? body : JSON.stringify(body) }),
      }),
    );
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return {
      status: response.status,
      text,
      body: parsed,
      code: (parsed as { code?: string } | undefined)?.code,
      retryAfter: response.headers.has('Retry-After'),
    };
  };
  return {
    send,
    /** Sends one request and runs the world until it is answered. */
    async json(
      method: string,
      path: string,
      token: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ): Promise<Answer> {
      let answer: Answer | undefined;
      const pending = send(method, path, token, body, headers).then((a) => (answer = a));
      await world.run();
      await pending.catch(() => undefined);
      if (answer === undefined) throw new Error(`${method} ${path} was never answered`);
      return answer;
    },
  };
}

/**
 * Whether a record (as answered or stored) is the feed's state: values by name, whatever their
 * order (a record lists them in its definition's order; a fold adds a field set anew last).
 */
export function sameState(record: any, state: any): boolean {
  const sorted = (fieldValues: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(fieldValues).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const canonical = (s: any) =>
    s === undefined ? undefined : JSON.stringify({ ...s, fieldValues: sorted(s.fieldValues) });
  return canonical(byName(record)) === canonical(state);
}
