import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { call, world } from '../integration/helpers.ts';
import { chaos, type OutgoingCall } from './faults.ts';

/**
 * Webhook subscription writes under lost replies: each is one D1 batch that starts with its
 * ledger row, so a batch sent again after its reply was lost fails on that row and reads the
 * answer from it. Without the ledger, a create whose reply was lost and was sent again made a
 * second subscription (and the caller never saw the first one's secret).
 */

const RECEIVER = env.WEBHOOK_RECEIVER;
let names = 0;
const hookUrl = (): string => `${RECEIVER}/hook/chaos-${Date.now()}-${names++}`;

const batchTouching = (c: OutgoingCall, sql: string) =>
  c.target === 'd1' && c.from === 'worker' && c.method === 'batch' && c.sql.some((s) => s.includes(sql));

const hooksIn = async (workspaceId: number) =>
  (
    await env.DB.prepare('SELECT id, secret, status FROM webhooks WHERE workspace_id = ? ORDER BY id')
      .bind(workspaceId)
      .all<{ id: number; secret: string; status: string }>()
  ).results;

afterEach(() => {
  chaos.decide = undefined;
});

describe('webhook writes exactly once when replies are lost', () => {
  it(
    '20 unkeyed creates whose first batch commits and loses its reply: answered once each, one ' +
      'subscription each, with its secret',
    async () => {
      const { editor, workspaceId } = await world();
      let batches = 0;
      let lost = 0;
      const sent = new Set<string>();
      // Every other create batch commits and loses its reply; the Worker sends it again.
      chaos.decide = (c) => {
        if (!batchTouching(c, 'INSERT INTO webhooks')) return undefined;
        return batches++ % 2 === 0 && ++lost ? 'lose' : undefined;
      };
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => {
          const url = hookUrl();
          sent.add(url);
          return call('POST', `/workspaces/${workspaceId}/webhooks`, { key: editor.key, body: { url } });
        }),
      );
      chaos.decide = undefined;
      expect(lost).toBeGreaterThanOrEqual(10);
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(201));
      const hooks = await hooksIn(workspaceId);
      expect(hooks).toHaveLength(20);
      expect(answers.map((a) => a.body.id).sort((a, b) => a - b)).toEqual(hooks.map((h) => h.id));
      expect(new Set(answers.map((a) => a.body.url))).toEqual(sent);
      // Each answer's secret is the one its subscription signs with, even when read from the ledger.
      for (const a of answers) expect(hooks.find((h) => h.id === a.body.id)?.secret).toBe(a.body.secret);
    },
  );

  it(
    '20 keyed creates, a third of the Worker’s D1 replies lost, clients retrying 5xx with their key: ' +
      'one subscription per key',
    async () => {
      const { editor, workspaceId } = await world();
      let lost = 0;
      chaos.decide = (c) =>
        c.target === 'd1' && c.from === 'worker' && Math.random() < 0.34 && ++lost ? 'lose' : undefined;
      const create = async (i: number) => {
        const body = { url: `${RECEIVER}/hook/chaos-keyed-${workspaceId}-${i}` };
        for (let attempt = 1; ; attempt++) {
          const res = await call('POST', `/workspaces/${workspaceId}/webhooks`, {
            key: editor.key,
            body,
            headers: { 'Idempotency-Key': `hook-${i}` },
          });
          if ((res.status < 500 && res.status !== 409) || attempt === 30) return res;
        }
      };
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => create(i)));
      chaos.decide = undefined;
      expect(lost).toBeGreaterThan(0);
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(201));
      const hooks = await hooksIn(workspaceId);
      expect(hooks).toHaveLength(20);
      expect(answers.map((a) => a.body.id).sort((a, b) => a - b)).toEqual(hooks.map((h) => h.id));
      for (const a of answers) expect(hooks.find((h) => h.id === a.body.id)?.secret).toBe(a.body.secret);
      // A replay now, with nothing lost, is the same answer.
      const again = await call('POST', `/workspaces/${workspaceId}/webhooks`, {
        key: editor.key,
        body: { url: `${RECEIVER}/hook/chaos-keyed-${workspaceId}-0` },
        headers: { 'Idempotency-Key': 'hook-0' },
      });
      expect(again.headers.get('Idempotent-Replayed')).toBe('true');
      expect(again.body).toEqual(answers[0]?.body);
    },
    60_000,
  );

  it('a pause and a delete whose batch reply is lost are answered from their ledger rows', async () => {
    const { editor, workspaceId } = await world();
    const made = await call('POST', `/workspaces/${workspaceId}/webhooks`, {
      key: editor.key,
      body: { url: hookUrl() },
    });
    const path = `/workspaces/${workspaceId}/webhooks/${made.body.id}`;
    let lostPause = 0;
    chaos.decide = (c) => (batchTouching(c, 'UPDATE webhooks SET status') && lostPause++ === 0 ? 'lose' : undefined);
    const paused = await call('PATCH', path, { key: editor.key, body: { status: 'disabled' } });
    expect(lostPause).toBeGreaterThanOrEqual(2);
    expect([paused.status, paused.body.status]).toEqual([200, 'disabled']);
    expect((await hooksIn(workspaceId))[0]?.status).toBe('disabled');

    let lostDelete = 0;
    chaos.decide = (c) => (batchTouching(c, 'DELETE FROM webhooks') && lostDelete++ === 0 ? 'lose' : undefined);
    const deleted = await call('DELETE', path, { key: editor.key, headers: { 'Idempotency-Key': 'gone-1' } });
    chaos.decide = undefined;
    // Sent again, the batch met its ledger row: 204, not the 404 a second delete would answer.
    expect(lostDelete).toBeGreaterThanOrEqual(2);
    expect(deleted.status).toBe(204);
    expect(await hooksIn(workspaceId)).toEqual([]);
    const replayed = await call('DELETE', path, { key: editor.key, headers: { 'Idempotency-Key': 'gone-1' } });
    expect([replayed.status, replayed.headers.get('Idempotent-Replayed')]).toEqual([204, 'true']);
  });
});
