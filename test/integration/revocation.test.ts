import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/storage/store.ts';
import { admin, call, createOne, expectProblem, letMemoryExpire, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const version = async (id: number) =>
  (await env.DB.prepare('SELECT version FROM records WHERE id = ?').bind(id).first<{ version: number }>())?.version;
const original = Store.prototype.readableRecord;

afterEach(() => {
  Store.prototype.readableRecord = original;
});

/**
 * Holds the reply of the next read of a record (as GET /records/{id} reads it, with its caller)
 * after D1 answered it, until released.
 * Both sides poll a flag: a promise resolved from another request's context would never wake
 * the request that awaits it.
 */
function holdNextRead(): { answered: Promise<void>; release: () => void } {
  const state = { answered: false, released: false };
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise((resolve) => setTimeout(resolve, 2));
  };
  Store.prototype.readableRecord = async function (this: Store, ...args: Parameters<Store['readableRecord']>) {
    Store.prototype.readableRecord = original;
    const read = await original.apply(this, args);
    state.answered = true;
    await until(() => state.released);
    return read;
  };
  return { answered: until(() => state.answered), release: () => void (state.released = true) };
}

describe('a revocation is never undone by a read that was in flight', () => {
  it(
    'a read D1 answered before DELETE /admin/keys/{id} but whose reply arrives after does not bring the' + ' key back',
    async () => {
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
      const [{ id: keyId }] = (await admin('GET', `/admin/users/${editor.id}/keys`)).body;
      letMemoryExpire();
      const held = holdNextRead();
      const read = call('GET', `/records/${record.id}`, { key: editor.key });
      await held.answered;
      expect((await admin('DELETE', `/admin/keys/${keyId}`)).status).toBe(204);
      held.release();
      expect((await read).status).toBe(200); // answered before the revocation: fine to show
      const patch = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 1)] },
      });
      expectProblem(patch, 401, 'unauthorized');
      expect(await version(record.id)).toBe(1);
    },
  );

  it('a read in flight across a member removal does not bring the membership back', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    letMemoryExpire();
    const held = holdNextRead();
    const read = call('GET', `/records/${record.id}`, { key: editor.key });
    await held.answered;
    expect((await admin('DELETE', `/admin/workspaces/${workspaceId}/members/${editor.id}`)).status).toBe(204);
    held.release();
    expect((await read).status).toBe(200);
    const patch = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('age', 1)] },
    });
    expectProblem(patch, 404, 'not_found');
    const batch = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: [{ id: record.id, fieldValues: [fv('age', 2)] }],
    });
    expectProblem(batch, 404, 'not_found');
    expect(await version(record.id)).toBe(1);
  });

  it('a role lowered to viewer takes effect at once in this isolate, even with a read in flight', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    letMemoryExpire();
    const held = holdNextRead();
    const read = call('GET', `/records/${record.id}`, { key: editor.key });
    await held.answered;
    expect(
      (await admin('PUT', `/admin/workspaces/${workspaceId}/members/${editor.id}`, { role: 'viewer' })).status,
    ).toBe(200);
    held.release();
    await read;
    const patch = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('age', 1)] },
    });
    expectProblem(patch, 403, 'forbidden');
    expect(await version(record.id)).toBe(1);
  });
});
