import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, countRows, expectProblem } from '../integration/helpers.ts';
import { chaos, type OutgoingCall } from './faults.ts';

/**
 * Admin writes under lost replies: each is one D1 batch that starts with its ledger row, so a
 * batch sent again after its reply was lost fails on that row and reads the answer from it.
 * The finding this replays: 30 POST /admin/workspaces answered 24 × 201 and 6 × 503 "try
 * again", and 28 workspaces existed.
 */

const writesWorkspaces = (c: OutgoingCall) =>
  c.target === 'd1' && c.method === 'batch' && c.sql.some((sql) => sql.includes('INSERT INTO workspaces'));
const readsLedger = (c: OutgoingCall) =>
  c.target === 'd1' && c.sql.some((sql) => sql.startsWith('SELECT id, outcome FROM writes'));
const workspaceIds = async () =>
  (await env.DB.prepare('SELECT id FROM workspaces ORDER BY id').all<{ id: number }>()).results.map((r) => r.id);

afterEach(() => {
  chaos.decide = undefined;
  chaos.onLost = undefined;
});

describe('admin writes exactly once when replies are lost', () => {
  it(
    '30 keyed POST /admin/workspaces, every D1 call of the Worker losing a third of its replies: as ' +
      'many workspaces as 201 answers',
    async () => {
      const before = await workspaceIds();
      let lost = 0;
      chaos.decide = (c) =>
        c.target === 'd1' && c.from === 'worker' && Math.random() < 0.34 && ++lost ? 'lose' : undefined;
      const create = async (i: number) => {
        // A client that retries a 5xx with the same key, as a key is for.
        for (let attempt = 1; ; attempt++) {
          const res = await call('POST', '/admin/workspaces', {
            key: ADMIN_TOKEN,
            body: { name: `ws-${i}` },
            headers: { 'Idempotency-Key': `ws-${i}` },
          });
          if (res.status < 500 || attempt === 20) return res;
        }
      };
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => create(i)));
      chaos.decide = undefined;
      expect(lost).toBeGreaterThan(0);
      expect(answers.map((a) => a.status)).toEqual(Array(30).fill(201));
      const created = (await workspaceIds()).filter((id) => !before.includes(id));
      expect(created.length).toBe(30);
      expect(answers.map((a) => a.body.id).sort((a, b) => a - b)).toEqual(created);
      expect(answers.map((a) => a.body.name)).toEqual(Array.from({ length: 30 }, (_, i) => `ws-${i}`));
    },
  );

  it(
    '30 unkeyed POST /admin/workspaces whose first batch reply is lost: each is settled from its ledger' +
      ' row, one workspace each',
    async () => {
      const before = await workspaceIds();
      const lostOnce = new Set<number>();
      let n = 0;
      // The first batch of each request commits and loses its reply; the request sends it again.
      chaos.decide = (c) => {
        if (!writesWorkspaces(c)) return undefined;
        const i = n++;
        if (i % 2 === 0) {
          lostOnce.add(i);
          return 'lose';
        }
        return undefined;
      };
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          call('POST', '/admin/workspaces', { key: ADMIN_TOKEN, body: { name: `u-${i}` } }),
        ),
      );
      chaos.decide = undefined;
      expect(lostOnce.size).toBeGreaterThanOrEqual(15);
      expect(answers.map((a) => a.status)).toEqual(Array(30).fill(201));
      const created = (await workspaceIds()).filter((id) => !before.includes(id));
      expect(answers.map((a) => a.body.id).sort((a, b) => a - b)).toEqual(created);
    },
  );

  it(
    'an unkeyed create whose outcome D1 never tells in time is 503 outcome_unknown, never a plain "try ' +
      'again"; with a key, the retry learns it',
    async () => {
      const users = await countRows('users');
      chaos.decide = (c) => {
        if (c.target !== 'd1') return undefined;
        if (c.method === 'batch' && c.sql.some((sql) => sql.includes('INSERT INTO users'))) return 'lose';
        return readsLedger(c) ? 'fail' : undefined;
      };
      const unkeyed = await call('POST', '/admin/users', { key: ADMIN_TOKEN, body: { name: 'maybe' } });
      expectProblem(unkeyed, 503, 'unavailable');
      // Not the "nothing was written, try again" of a busy record: the answer says the outcome is unknown.
      expect(unkeyed.body.title).toBe('Outcome unknown');
      expect(unkeyed.body.detail).toContain('Idempotency-Key');
      // It did commit, once: a plain retry would make a second user, which is what a key avoids.
      expect(await countRows('users')).toBe(users + 1);

      const keyed = { key: ADMIN_TOKEN, body: { name: 'kept' }, headers: { 'Idempotency-Key': 'unknown-1' } };
      const unknown = await call('POST', '/admin/users', keyed);
      expect([unknown.status, unknown.body.title]).toEqual([503, 'Outcome unknown']);
      chaos.decide = undefined;
      const retried = await call('POST', '/admin/users', keyed);
      expect(retried.status).toBe(201);
      expect(retried.headers.get('Idempotent-Replayed')).toBe('true');
      expect(await countRows('users')).toBe(users + 2);
      const stored = await env.DB.prepare('SELECT name FROM users WHERE id = ?').bind(retried.body.id).first();
      expect(stored).toEqual({ name: 'kept' });
    },
    60_000,
  );
});
