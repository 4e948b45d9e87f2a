import { Webhook as Verifier } from 'standardwebhooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byName, foldFeed } from '../feed-fold.ts';
import { startReceiver, type Receiver } from '../tools/webhook-receiver.ts';
import { accepted, type Received } from '../webhook-log.ts';
import { startLocalWorker, type LocalWorker } from './server.ts';

/**
 * Webhooks end to end: `wrangler dev` delivering to a real receiver (a Node HTTP server) on a
 * free port. Retries are timed from 250 ms (not 5 s) and a subscription is disabled after 12 s
 * of failing (not 3 days), so every fault plays out within half a minute or so. All scenarios run
 * at once against one stream of writes.
 */

const ADMIN = 'e2e-admin-token';
const RETRY_BASE_MS = 250;
const DISABLE_AFTER_MS = 12_000;
/** How long the flaky receiver is down: long enough for several retries of the first item. */
const FLAKY_MS = 10_000;
let worker: LocalWorker;
let receiver: Receiver;

async function http(method: string, path: string, key: string, body?: unknown): Promise<any> {
  const res = await fetch(`${worker.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

async function ok(method: string, path: string, key: string, body?: unknown): Promise<any> {
  const answer = await http(method, path, key, body);
  if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

const log = (name: string): Received[] => receiver.logs.get(name) ?? [];

async function until(what: string, done: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function feed(key: string, workspaceId: number): Promise<any[]> {
  const items: any[] = [];
  let after = '';
  for (;;) {
    const page = await ok('GET', `/workspaces/${workspaceId}/changes?limit=1000${after}`, key);
    if (page.items.length === 0) return items;
    items.push(...page.items);
    after = `&after=${encodeURIComponent(page.nextCursor)}`;
  }
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

beforeAll(async () => {
  receiver = await startReceiver();
  worker = await startLocalWorker({
    vars: {
      ADMIN_TOKEN: ADMIN,
      WEBHOOK_ALLOW_HTTP: receiver.url,
      WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS),
      WEBHOOK_DISABLE_AFTER_MS: String(DISABLE_AFTER_MS),
    },
  });
});

afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
});

/** A user with a key, editor of a new workspace with one object: the usual start. */
async function setUp(name: string) {
  const user = await ok('POST', '/admin/users', ADMIN, { name });
  const { key } = await ok('POST', `/admin/users/${user.id}/keys`, ADMIN);
  const ws = await ok('POST', '/admin/workspaces', ADMIN, { name });
  await ok('PUT', `/admin/workspaces/${ws.id}/members/${user.id}`, ADMIN, { role: 'editor' });
  const fields = [
    { name: 'firstName', type: 'text', required: true },
    { name: 'age', type: 'integer' },
  ];
  const object = await ok('POST', '/admin/objects', ADMIN, {
    name,
    workspaceIds: [ws.id],
    nameTemplate: '{firstName}',
    fields,
  });
  return { key, workspaceId: ws.id as number, objectId: object.id as number };
}

describe('webhooks against wrangler dev and a real receiver', () => {
  it(
    '8 concurrent writers: every change arrives signed and in order; a receiver down 10 s catches up; ' +
      'one that never recovers is disabled and loses nothing once re-enabled; a filter gets exactly its ' +
      'items; replay re-sends',
    async () => {
      const user = await ok('POST', '/admin/users', ADMIN, { name: 'hooks' });
      const { key } = await ok('POST', `/admin/users/${user.id}/keys`, ADMIN);
      const ws = await ok('POST', '/admin/workspaces', ADMIN, { name: 'hooks' });
      await ok('PUT', `/admin/workspaces/${ws.id}/members/${user.id}`, ADMIN, { role: 'editor' });
      const fields = [
        { name: 'firstName', type: 'text', required: true },
        { name: 'age', type: 'integer' },
      ];
      const objectA = await ok('POST', '/admin/objects', ADMIN, {
        name: 'A',
        workspaceIds: [ws.id],
        nameTemplate: '{firstName}',
        fields,
      });
      const objectB = await ok('POST', '/admin/objects', ADMIN, {
        name: 'B',
        workspaceIds: [ws.id],
        nameTemplate: '{firstName}',
        fields,
      });
      const hooks = `/workspaces/${ws.id}/webhooks`;
      const subscribe = (name: string, extra: Record<string, unknown> = {}) =>
        ok('POST', hooks, key, { url: `${receiver.url}/hook/${name}`, ...extra });

      // The receivers: healthy, down for the first 10 s, down for good, and a filter.
      const started = Date.now();
      await fetch(`${receiver.url}/control/flaky`, {
        method: 'POST',
        body: JSON.stringify({ failUntil: started + FLAKY_MS }),
      });
      await fetch(`${receiver.url}/control/dead`, { method: 'POST', body: JSON.stringify({ failAlways: true }) });
      const all = await subscribe('all');
      await subscribe('flaky');
      const dead = await subscribe('dead');
      await subscribe('filtered', { types: ['created', 'deleted'], objectIds: [objectB.id] });

      // 8 writers at once, each on its own record: create, 4 patches, delete, restore.
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          const objectId = w % 2 === 0 ? objectA.id : objectB.id;
          const [{ record }] = await ok('POST', '/records/batch', key, [
            { objectId, fieldValues: [{ fieldName: 'firstName', value: `W${w}` }] },
          ]);
          const path = `/workspaces/${ws.id}/records/${record.id}`;
          for (let p = 0; p < 4; p++) await ok('PATCH', path, key, { fieldValues: [{ fieldName: 'age', value: p }] });
          await ok('DELETE', path, key);
          await ok('POST', `${path}/restore`, key);
        }),
      );
      const expected = await feed(key, ws.id);
      expect(expected).toHaveLength(56);
      const cursors = expected.map((item) => item.cursor);

      // Healthy: each webhook-id at least once; after dedupe, in feed order; signed; folds into every record.
      await until('every item at the healthy receiver', () => accepted(log('all')).length >= 56, 30_000);
      const got = accepted(log('all'));
      expect(got.map((e) => e.id)).toEqual(cursors);
      const verifier = new Verifier(all.secret);
      const items = got.map((e) =>
        verifier.verify(e.body, {
          'webhook-id': e.id,
          'webhook-timestamp': e.timestamp,
          'webhook-signature': e.signature,
        }),
      );
      expect(items).toEqual(expected);
      const last = new Map(foldFeed(items).map((state) => [state.id, state]));
      for (const [id, state] of last) expect(state).toEqual(byName(await ok('GET', `/records/${id}`, key)));
      // Delivery latency: the change's commit time (its `at`) to its receipt, same machine clock.
      const latency = got.map((e, i) => e.at - (expected[i] as { at: number }).at).sort((a, b) => a - b);
      console.log(
        `webhook latency commit→receipt over ${latency.length} items: p50 ${percentile(latency, 50)} ms, p99 ` +
          `${percentile(latency, 99)} ms, max ${latency.at(-1)} ms`,
      );

      // Filtered: exactly the created and deleted items of object B's records.
      const recordsOfB = new Set(expected.filter((i) => i.record?.objectId === objectB.id).map((i) => i.recordId));
      const wanted = expected.filter((i) => recordsOfB.has(i.recordId) && ['created', 'deleted'].includes(i.type));
      expect(wanted).toHaveLength(8);
      await until('the filtered items', () => accepted(log('filtered')).length >= 8, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(log('filtered').map((e) => JSON.parse(e.body))).toEqual(wanted);

      // Replay: everything after the 50th item again, with the same ids.
      await ok('POST', `${hooks}/${all.id}/replay`, key, { after: cursors[49] });
      await until('the replay', () => log('all').length >= 56 + 6, 30_000);
      expect(
        log('all')
          .slice(56)
          .map((e) => e.id),
      ).toEqual(cursors.slice(50));

      // Down for 10 s: retried (only the first item while down), then everything in order.
      await until('the flaky receiver to catch up', () => accepted(log('flaky')).length >= 56, 60_000);
      expect(accepted(log('flaky')).map((e) => e.id)).toEqual(cursors);
      const failures = log('flaky').filter((e) => e.status === 500);
      expect(failures.length).toBeGreaterThan(3);
      expect(new Set(failures.map((e) => e.id))).toEqual(new Set([cursors[0]]));

      // Down for good: disabled after DISABLE_AFTER_MS of failing, with a reason.
      await until(
        'the dead subscription to be disabled',
        async () => (await ok('GET', hooks, key)).items.find((h: any) => h.id === dead.id).status === 'disabled',
        90_000,
      );
      const disabled = (await ok('GET', hooks, key)).items.find((h: any) => h.id === dead.id);
      expect(disabled.reason).toMatch(/^failing since .+: HTTP 500: receiver down$/);
      expect(accepted(log('dead'))).toEqual([]);
      // Re-enabled once the receiver is back: nothing was lost.
      await fetch(`${receiver.url}/control/dead`, { method: 'POST', body: '{}' });
      expect((await ok('PATCH', `${hooks}/${dead.id}`, key, { status: 'active' })).status).toBe('active');
      await until('the re-enabled subscription to catch up', () => accepted(log('dead')).length >= 56, 30_000);
      expect(accepted(log('dead')).map((e) => e.id)).toEqual(cursors);
      const deliveries = await ok('GET', `${hooks}/${dead.id}/deliveries`, key);
      // The log holds every attempt the receiver saw (up to its last 100), newest first.
      expect(deliveries.items.map((a: any) => [a.cursor, a.status])).toEqual(
        log('dead')
          .map((e) => [e.id, e.status])
          .reverse()
          .slice(0, 100),
      );
      expect(deliveries.items[0]).toMatchObject({ cursor: cursors[55], status: 204, error: null });
    },
    180_000,
  );

  it('a change on a quiet service reaches its receiver quickly (latency, one change at a time)', async () => {
    const { key, workspaceId, objectId } = await setUp('quiet');
    await ok('POST', `/workspaces/${workspaceId}/webhooks`, key, { url: `${receiver.url}/hook/quiet` });
    const latencies: number[] = [];
    for (let i = 0; i < 30; i++) {
      const [{ record }] = await ok('POST', '/records/batch', key, [
        { objectId, fieldValues: [{ fieldName: 'firstName', value: `Q${i}` }] },
      ]);
      await until('the change', () => log('quiet').length > i, 10_000);
      latencies.push((log('quiet')[i] as Received).at - record.createdAt);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(
      `webhook latency commit→receipt, quiet, ${sorted.length} changes: p50 ${percentile(sorted, 50)} ms, p99 ` +
        `${percentile(sorted, 99)} ms`,
    );
    expect(accepted(log('quiet'))).toHaveLength(30);
  });

  it('restarting the service mid-stream loses nothing: delivery resumes from the stored cursor', async () => {
    const state = mkdtempSync(join(tmpdir(), 'record-service-restart-'));
    const vars = { ADMIN_TOKEN: ADMIN, WEBHOOK_ALLOW_HTTP: receiver.url, WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS) };
    const first = worker;
    try {
      worker = await startLocalWorker({ vars, persistTo: state });
      const { key, workspaceId, objectId } = await setUp('restart');
      await fetch(`${receiver.url}/control/restart`, { method: 'POST', body: JSON.stringify({ delayMs: 150 }) });
      await ok('POST', `/workspaces/${workspaceId}/webhooks`, key, { url: `${receiver.url}/hook/restart` });
      await ok(
        'POST',
        '/records/batch',
        key,
        Array.from({ length: 20 }, (_, i) => ({ objectId, fieldValues: [{ fieldName: 'firstName', value: `R${i}` }] })),
      );
      const expected = await feed(key, workspaceId);
      await until('a few deliveries', () => log('restart').length >= 3, 20_000);
      await worker.stop();
      const before = accepted(log('restart')).length;
      expect(before).toBeLessThan(20);
      // No write after the restart: only the stored alarm and cursor can finish the job.
      worker = await startLocalWorker({ vars, persistTo: state });
      await until('every item after the restart', () => accepted(log('restart')).length >= 20, 60_000);
      expect(accepted(log('restart')).map((e) => e.id)).toEqual(expected.map((item) => item.cursor));
    } finally {
      await worker.stop();
      worker = first;
      rmSync(state, { recursive: true, force: true });
    }
  }, 120_000);
});
