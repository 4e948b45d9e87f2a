import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalWorker, type LocalWorker, sendTo } from './server.ts';

/**
 * Read-your-writes over HTTP with a read replica 500 ms behind the primary, near the Worker (the
 * chaos build's geo model, test/chaos/replica.ts): the replica really serves old state, so a read
 * without a bookmark can be stale, and one with the bookmark of a write never is.
 */

const ADMIN = 'replica-admin-token';
const LAG_MS = 500;
let worker: LocalWorker;

beforeAll(async () => {
  worker = await startLocalWorker({
    config: fileURLToPath(new URL('../chaos/wrangler.toml', import.meta.url)),
    vars: { ADMIN_TOKEN: ADMIN, GEO_REPLICA_LAG_MS: String(LAG_MS), GEO_FAR_MS: '20', GEO_NEAR_MS: '1' },
    replica: true,
  });
});

afterAll(async () => {
  await worker?.stop();
});

const send = (method: string, path: string, key: string, body?: unknown, bookmark?: string) =>
  sendTo(worker, method, path, key, body, bookmark);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('read replicas with read-your-writes (500 ms replica lag)', () => {
  it(
    'a client that reads with its write’s bookmark always sees the write; without it the replica ' + 'answers stale',
    async () => {
      const user = (await send('POST', '/admin/users', ADMIN, { name: 'near' })).body;
      const { key } = (await send('POST', `/admin/users/${user.id}/keys`, ADMIN)).body;
      const ws = (await send('POST', '/admin/workspaces', ADMIN, { name: 'near' })).body;
      await send('PUT', `/admin/workspaces/${ws.id}/members/${user.id}`, ADMIN, { role: 'editor' });
      const object = (
        await send('POST', '/admin/objects', ADMIN, {
          name: 'Near',
          workspaceIds: [ws.id],
          fields: [{ name: 'n', type: 'integer' }],
        })
      ).body;
      // A key just issued may not be on the replica yet: without a bookmark it can be unknown there.
      let stale = (await send('GET', '/me', key)).status === 401 ? 1 : 0;
      await sleep(LAG_MS + 200);
      expect((await send('GET', '/me', key)).status).toBe(200);

      const created = await send('POST', '/records/batch', key, [{ objectId: object.id, fieldValues: [] }]);
      expect(created.status).toBe(201);
      const id = created.body[0].record.id as number;
      let bookmark = created.bookmark ?? undefined;
      const unseen = await send('GET', `/records/${id}`, key);
      if (unseen.status === 404) stale++;
      for (let n = 1; n <= 8; n++) {
        const patched = await send('PATCH', `/workspaces/${ws.id}/records/${id}`, key, {
          fieldValues: [{ fieldName: 'n', value: n }],
        });
        expect(patched.status).toBe(200);
        expect(patched.bookmark! > bookmark!).toBe(true);
        bookmark = patched.bookmark!;
        // Read at once without the bookmark: the replica, 500 ms behind, has not applied the patch yet.
        const anywhere = await send('GET', `/records/${id}`, key);
        if (anywhere.status === 404 || anywhere.body.version < n + 1) stale++;
        const mine = await send('GET', `/records/${id}`, key, undefined, bookmark);
        expect([mine.status, mine.body.version, mine.body.fieldValues]).toEqual([
          200,
          n + 1,
          [{ fieldName: 'n', value: n }],
        ]);
        expect(mine.bookmark! >= bookmark).toBe(true);
        const listed = await send('GET', `/workspaces/${ws.id}/records?field.n=${n}`, key, undefined, bookmark);
        expect(listed.body.items.map((r: { id: number }) => r.id)).toEqual([id]);
      }
      // Shown: the replica answered old state while the writes were newer than its lag.
      expect(stale).toBeGreaterThan(0);
      // Once the lag has passed, the replica has caught up: a read without a bookmark sees the last write.
      await sleep(LAG_MS + 200);
      const later = await send('GET', `/records/${id}`, key);
      expect([later.status, later.body.version]).toEqual([200, 9]);
    },
  );
});
