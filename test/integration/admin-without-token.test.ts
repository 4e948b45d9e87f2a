import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index.ts';
import { admin, newUser } from './helpers.ts';

/** The admin API with no ADMIN_TOKEN configured: a tenant administrator's key is enough. */

describe('without ADMIN_TOKEN', () => {
  it("without ADMIN_TOKEN, takes a tenant administrator's key (the default tenant's too) and no other", async () => {
    const { ADMIN_TOKEN: _configured, ...withoutAdminToken } = env;
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
    const made = await admin('POST', '/admin/users', { name: 'head', admin: true });
    const headKey = (await admin('POST', `/admin/users/${made.body.id}/keys`)).body.key as string;
    const plain = await newUser('plain');
    const send = async (key: string | undefined, method = 'GET', path = '/admin/users', body?: unknown) => {
      const headers: Record<string, string> = body === undefined ? {} : { 'Content-Type': 'application/json' };
      if (key !== undefined) headers.Authorization = `Bearer ${key}`;
      const res = await worker.fetch(
        new Request(`http://x${path}`, {
          method,
          headers,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
        withoutAdminToken,
        ctx,
      );
      return { status: res.status, body: (await res.json()) as any };
    };
    const read = await send(headKey);
    expect([read.status, Array.isArray(read.body.items)]).toEqual([200, true]);
    // It administers: a workspace made with it is there afterwards.
    const workspace = await send(headKey, 'POST', '/admin/workspaces', { name: 'made without the token' });
    expect(workspace.status).toBe(201);
    const stored = await env.DB.prepare('SELECT name FROM workspaces WHERE id = ?').bind(workspace.body.id).first();
    expect(stored).toEqual({ name: 'made without the token' });
    // It issues keys: the key works (derived under the service's own secret, never under an empty one).
    const issued = await send(headKey, 'POST', `/admin/users/${made.body.id}/keys`);
    expect(issued.status).toBe(201);
    expect(issued.body.key).toMatch(/^rk_/);
    const me = await worker.fetch(
      new Request('http://x/me', { headers: { Authorization: `Bearer ${issued.body.key}` } }),
      withoutAdminToken,
      ctx,
    );
    expect([me.status, ((await me.json()) as { userId: number }).userId]).toEqual([200, made.body.id]);
    // Anything else is told the admin API is off, as before.
    for (const key of [plain.key, 'rk_not-a-key', undefined]) {
      const answer = await send(key);
      expect([answer.status, answer.body.title]).toEqual([503, 'Admin API disabled']);
    }
  });
});
