import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalWorker, type LocalWorker, sendTo } from './server.ts';

/**
 * A bookmark is no isolate's memory: two Workers (two wrangler dev processes, so two isolates)
 * on one D1 database each read at least the state of a bookmark the other answered.
 */

const ADMIN = 'two-workers-admin-token';
let first: LocalWorker;
let second: LocalWorker;

beforeAll(async () => {
  first = await startLocalWorker({ vars: { ADMIN_TOKEN: ADMIN } });
  second = await startLocalWorker({ vars: { ADMIN_TOKEN: ADMIN }, state: first.state });
});

afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

const send = sendTo;

describe('bookmarks across two Workers', () => {
  it('a write answered by one Worker is read, with its bookmark, through the other, and back', async () => {
    const user = (await send(first, 'POST', '/admin/users', ADMIN, { name: 'two' })).body;
    const { key } = (await send(first, 'POST', `/admin/users/${user.id}/keys`, ADMIN)).body;
    const ws = (await send(first, 'POST', '/admin/workspaces', ADMIN, { name: 'two' })).body;
    await send(first, 'PUT', `/admin/workspaces/${ws.id}/members/${user.id}`, ADMIN, { role: 'editor' });
    const object = (
      await send(first, 'POST', '/admin/objects', ADMIN, {
        name: 'Two',
        workspaceIds: [ws.id],
        fields: [{ name: 'n', type: 'integer' }],
      })
    ).body;
    const created = await send(first, 'POST', '/records/batch', key, [{ objectId: object.id, fieldValues: [] }]);
    const id = created.body[0].record.id as number;
    let bookmark = created.bookmark;
    for (let n = 1; n <= 4; n++) {
      const [writer, reader] = n % 2 === 1 ? [first, second] : [second, first];
      const patched = await send(
        writer,
        'PATCH',
        `/workspaces/${ws.id}/records/${id}`,
        key,
        {
          fieldValues: [{ fieldName: 'n', value: n }],
        },
        bookmark,
      );
      expect(patched.status).toBe(200);
      expect(patched.bookmark > bookmark).toBe(true);
      const read = await send(reader, 'GET', `/records/${id}`, key, undefined, patched.bookmark);
      expect([read.status, read.body.version, read.body.fieldValues]).toEqual([
        200,
        n + 1,
        [{ fieldName: 'n', value: n }],
      ]);
      expect(read.bookmark >= patched.bookmark).toBe(true);
      bookmark = read.bookmark;
    }
  });
});
