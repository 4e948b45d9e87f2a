import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byName, foldItem } from '../feed-fold.ts';
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
async function send(
  method: string,
  path: string,
  key: string,
  body: unknown,
  idempotencyKey?: string,
  extra: Record<string, string> = {},
): Promise<Final> {
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
          ...extra,
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
    '16 clients create a workspace as the admin, patch, batch (with elements that change nothing), patch on ' +
      'If-Match, delete and restore, every request retried with its key; one workspace per key, and a feed ' +
      'consumer rebuilds every record',
    { timeout: 120_000 },
    async () => {
      const user = await setup('POST', '/admin/users', { name: 'chaos' });
      const { key } = await setup('POST', `/admin/users/${user.id}/keys`);
      const workspace = await setup('POST', '/admin/workspaces', { name: 'chaos' });
      await setup('PUT', `/admin/workspaces/${workspace.id}/members/${user.id}`, { role: 'editor' });
      const fields = [
        ...Array.from({ length: CLIENTS }, (_, c) => ({ name: `c${c}`, type: 'integer' })),
        { name: 'z', type: 'integer' },
      ];
      const object = await setup('POST', '/admin/objects', { name: 'Shared', workspaceIds: [workspace.id], fields });

      // Creates with keys: exactly one record per key, however often each is sent.
      const creates = await Promise.all(
        Array.from({ length: RECORDS }, (_, i) =>
          send(
            'POST',
            '/records/batch',
            key,
            [{ objectId: object.id, fieldValues: [{ fieldName: 'z', value: 0 }] }],
            `create-${i}`,
          ),
        ),
      );
      expect(creates.map((c) => c.status)).toEqual(Array(RECORDS).fill(201));
      const ids: number[] = creates.map((c) => c.body[0].record.id);
      const again = await send(
        'POST',
        '/records/batch',
        key,
        [{ objectId: object.id, fieldValues: [{ fieldName: 'z', value: 0 }] }],
        'create-0',
      );
      expect([again.replayed, again.body[0].record.id]).toEqual([true, ids[0]]);

      // Each client also owns a record it deletes and restores (so the shared ones stay patchable).
      const own = await Promise.all(
        Array.from({ length: CLIENTS }, (_, c) =>
          send('POST', '/records/batch', key, [{ objectId: object.id, fieldValues: [] }], `own-${c}`),
        ),
      );
      const owned: number[] = own.map((c) => c.body[0].record.id);

      // The history: every record answered by an acknowledged write, as answered.
      const answered: any[] = [];
      const last = new Map<string, number>(); // `${client}:${record}` -> last acknowledged value
      let faults = 0;
      let requests = 0;
      const workspaces = new Map<number, string>();
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, client) => {
          // An admin write with a key, retried like the rest: one workspace per key, whatever is lost.
          const made = await send('POST', '/admin/workspaces', ADMIN, { name: `keyed-${client}` }, `ws-${client}`);
          expect(made.status).toBe(201);
          workspaces.set(made.body.id, made.body.name);
          for (let round = 1; round <= ROUNDS; round++) {
            const value = round;
            const idempotencyKey = `c${client}-r${round}`;
            requests++;
            const kind = round % 4;
            if (kind === 0) {
              // A batch of the shared records whose last element changes nothing (z is always 0):
              // for that record, a guard and an answer, no change.
              const body = ids.map((id, i) =>
                i === RECORDS - 1
                  ? { id, fieldValues: [{ fieldName: 'z', value: 0 }] }
                  : { id, fieldValues: [{ fieldName: `c${client}`, value }] },
              );
              const answer = await send('PATCH', '/records/batch', key, body, idempotencyKey);
              faults += answer.faults;
              expect(answer.status).toBe(200);
              for (const item of answer.body) {
                answered.push(item.record);
                if (item.record.id !== ids[RECORDS - 1]) last.set(`${client}:${item.record.id}`, value);
              }
            } else if (kind === 2) {
              // Delete or restore the client's own record, alternately.
              const deleting = round % 8 === 2;
              const path = `/workspaces/${workspace.id}/records/${owned[client]}${deleting ? '' : '/restore'}`;
              const answer = await send(deleting ? 'DELETE' : 'POST', path, key, undefined, idempotencyKey);
              faults += answer.faults;
              expect(answer.status).toBe(200);
              expect(answer.body.deleted).toBe(deleting);
              answered.push(answer.body);
            } else {
              // A patch; every other one conditional on the version just read: applied, or
              // refused with nothing written (the stored values below show none of its values).
              const id = ids[(client + round) % RECORDS] as number;
              const read = kind === 1 ? await send('GET', `/records/${id}`, key, undefined) : undefined;
              const answer = await send(
                'PATCH',
                `/workspaces/${workspace.id}/records/${id}`,
                key,
                { fieldValues: [{ fieldName: `c${client}`, value }] },
                idempotencyKey,
                read === undefined ? {} : { 'If-Match': `"${read.body.version}"` },
              );
              faults += answer.faults;
              if (read !== undefined && answer.status === 412) continue;
              expect(answer.status).toBe(200);
              answered.push(answer.body);
              last.set(`${client}:${id}`, value);
            }
          }
        }),
      );
      // The faults did happen, many of them: the service absorbs most (its own retries), so the
      // count comes from the chaos build, not from how often clients had to try again. Each request
      // makes at least one call of its own, a quarter of which fail: expect well over a tenth.
      expect(faults).toBeGreaterThan(requests / 10);

      // Exactly one workspace per admin key: the ones answered, and no other.
      const listed: { id: number; name: string }[] = [];
      for (let cursor = ''; ;) {
        const page = await send('GET', `/admin/workspaces?limit=100${cursor}`, ADMIN, undefined);
        listed.push(...page.body.items);
        if (page.body.nextCursor === null) break;
        cursor = `&cursor=${encodeURIComponent(page.body.nextCursor)}`;
      }
      const keyed = listed.filter((w) => w.name.startsWith('keyed-'));
      expect(new Map(keyed.map((w) => [w.id, w.name]))).toEqual(workspaces);
      expect(keyed.length).toBe(CLIENTS);

      // A feed consumer: every change in commit order, folded. Each record's versions run from 1
      // without a gap or a repeat; every acknowledged answer is the fold's state at its version;
      // the fold's last state is the record as stored.
      const feed: any[] = [];
      for (let after = ''; ;) {
        const page = await send('GET', `/workspaces/${workspace.id}/changes?limit=100${after}`, key, undefined);
        expect(page.status).toBe(200);
        feed.push(...page.body.items);
        if (page.body.items.length === 0) break;
        after = `&after=${page.body.nextCursor}`;
      }
      const states = new Map<string, any>();
      const folded = new Map<number, any>();
      for (const item of feed) {
        const state = foldItem(folded.get(item.recordId), item);
        expect(state.version).toBe((folded.get(item.recordId)?.version ?? 0) + 1);
        folded.set(item.recordId, state);
        states.set(`${item.recordId}@${item.version}`, state);
      }
      for (const record of answered) expect(byName(record)).toEqual(states.get(`${record.id}@${record.version}`));
      for (const id of [...ids, ...owned]) {
        const stored = await send('GET', `/records/${id}`, key, undefined);
        expect(byName(stored.body)).toEqual(folded.get(id));
        if (!ids.includes(id)) continue;
        for (let client = 0; client < CLIENTS; client++) {
          const held = stored.body.fieldValues.find((v: any) => v.fieldName === `c${client}`)?.value;
          expect(held).toBe(last.get(`${client}:${id}`));
        }
      }
    },
  );
});
