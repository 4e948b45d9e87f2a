import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalWorker, type LocalWorker } from './server.ts';

/**
 * A history check in the spirit of Jepsen, over HTTP against the chaos build: every D1 and object
 * call of the service fails before running 5 % of the time and loses its reply after running
 * 20 % of the time. Clients retry with the same Idempotency-Key until they get a final answer,
 * then the recorded history is checked against what the service stored.
 */

const ADMIN = 'chaos-admin-token';
const CLIENTS = 16;
const ROUNDS = 12;
const RECORDS = 3;
let worker: LocalWorker;

beforeAll(async () => {
  worker = await startLocalWorker({
    config: fileURLToPath(new URL('../chaos/wrangler.toml', import.meta.url)),
    vars: { ADMIN_TOKEN: ADMIN, CHAOS_LOST_REPLY: '0.2', CHAOS_FAIL: '0.05', CHAOS_RESTART: '0.1' },
  });
});

afterAll(async () => {
  await worker?.stop();
});

interface Final {
  status: number;
  body: any;
  replayed: boolean;
  tries: number;
  /** Faults injected into the Worker's calls over all tries (the chaos build's Chaos-Faults header). */
  faults: number;
}

/**
 * Sends a request until its answer is final: 2xx or 4xx, except 409 with Retry-After (the same
 * key still running — a careful client waits and asks again). 5xx and network errors are retried
 * with the same key, as the contract tells clients to.
 */
async function send(method: string, path: string, key: string, body: unknown, idempotencyKey?: string): Promise<Final> {
  let last: string | undefined;
  let faults = 0;
  for (let tries = 1; ; tries++) {
    try {
      const res = await fetch(`${worker.url}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...(idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      faults += Number(res.headers.get('Chaos-Faults') ?? 0);
      const final = res.status < 500 && !(res.status === 409 && res.headers.has('Retry-After'));
      last = `${res.status} ${text.slice(0, 300)}`;
      if (final)
        return {
          status: res.status,
          body: text === '' ? undefined : JSON.parse(text),
          replayed: res.headers.get('Idempotent-Replayed') === 'true',
          tries,
          faults,
        };
    } catch (error) {
      last = String(error);
      // A network error: the request may or may not have run; the key makes a retry safe.
    }
    if (tries > 200)
      throw new Error(`${method} ${path} (${idempotencyKey}): no final answer after 200 tries; last: ${last}`);
    await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
  }
}

/** Setup calls are not part of the history: retried until they succeed (a duplicate user or object is harmless). */
async function setup(method: string, path: string, body?: unknown): Promise<any> {
  const answer = await send(method, path, ADMIN, body);
  if (answer.status >= 300) throw new Error(`setup ${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

describe('exactly once under injected faults (chaos build over HTTP)', () => {
  it(
    '16 clients patching their own fields of 3 shared records, singly and in batches, every request retried with its key',
    { timeout: 120_000 },
    async () => {
      const user = await setup('POST', '/admin/users', { name: 'chaos' });
      const { key } = await setup('POST', `/admin/users/${user.id}/keys`);
      const workspace = await setup('POST', '/admin/workspaces', { name: 'chaos' });
      await setup('PUT', `/admin/workspaces/${workspace.id}/members/${user.id}`, { role: 'editor' });
      const fields = Array.from({ length: CLIENTS }, (_, c) => ({ name: `c${c}`, type: 'integer' }));
      const object = await setup('POST', '/admin/objects', { name: 'Shared', workspaceIds: [workspace.id], fields });

      // Creates with keys: exactly one record per key, however often each is sent.
      const creates = await Promise.all(
        Array.from({ length: RECORDS }, (_, i) =>
          send('POST', '/records/batch', key, [{ objectId: object.id, fieldValues: [] }], `create-${i}`),
        ),
      );
      expect(creates.map((c) => c.status)).toEqual(Array(RECORDS).fill(201));
      const ids: number[] = creates.map((c) => c.body[0].record.id);
      const again = await send('POST', '/records/batch', key, [{ objectId: object.id, fieldValues: [] }], 'create-0');
      expect([again.replayed, again.body[0].record.id]).toEqual([true, ids[0]]);

      // The history: every acknowledged write, per record, with the version its answer reported.
      const acknowledged = new Map<number, number[]>(ids.map((id) => [id, []]));
      const last = new Map<string, number>(); // `${client}:${record}` -> last acknowledged value
      let faults = 0;
      let requests = 0;
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, client) => {
          for (let round = 1; round <= ROUNDS; round++) {
            const value = round;
            const idempotencyKey = `c${client}-r${round}`;
            requests++;
            if (round % 3 === 0) {
              const answer = await send(
                'PATCH',
                '/records/batch',
                key,
                ids.map((id) => ({ id, fieldValues: [{ fieldName: `c${client}`, value }] })),
                idempotencyKey,
              );
              faults += answer.faults;
              expect(answer.status).toBe(200);
              for (const item of answer.body) {
                acknowledged.get(item.record.id)?.push(item.record.version);
                last.set(`${client}:${item.record.id}`, value);
              }
            } else {
              const id = ids[(client + round) % RECORDS] as number;
              const answer = await send(
                'PATCH',
                `/workspaces/${workspace.id}/records/${id}`,
                key,
                { fieldValues: [{ fieldName: `c${client}`, value }] },
                idempotencyKey,
              );
              faults += answer.faults;
              expect(answer.status).toBe(200);
              acknowledged.get(id)?.push(answer.body.version);
              last.set(`${client}:${id}`, value);
            }
          }
        }),
      );
      // The faults did happen, many of them: the service absorbs most (its own retries), so the
      // count comes from the chaos build, not from how often clients had to try again. Each request
      // makes at least one call of its own, a quarter of which fail: expect well over a tenth.
      expect(faults).toBeGreaterThan(requests / 10);

      for (const id of ids) {
        const versions = [...(acknowledged.get(id) ?? [])].sort((a, b) => a - b);
        // Every write changed the record (a client's field takes a new value each round), so:
        // the versions answered are distinct and consecutive from 2, and the stored version counts them all.
        expect(versions).toEqual(Array.from({ length: versions.length }, (_, i) => i + 2));
        const stored = await send('GET', `/records/${id}`, key, undefined);
        expect(stored.body.version).toBe(1 + versions.length);
        for (let client = 0; client < CLIENTS; client++) {
          const value = last.get(`${client}:${id}`);
          const held = stored.body.fieldValues.find((v: any) => v.fieldName === `c${client}`)?.value;
          expect(held).toBe(value);
        }
      }
    },
  );
});
