import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/storage/store.ts';
import { RecordWrites } from '../../src/storage/writes.ts';
import { admin, call, createOne, expectProblem, letMemoryExpire, world } from './helpers.ts';
import { roleWorld } from './role-world.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const version = async (id: number) =>
  (await env.DB.prepare('SELECT version FROM records WHERE id = ?').bind(id).first<{ version: number }>())?.version;
const original = Store.prototype.readableRecord;
const originalCommit = RecordWrites.prototype.commit;

afterEach(() => {
  Store.prototype.readableRecord = original;
  RecordWrites.prototype.commit = originalCommit;
});

const until = async (done: () => boolean) => {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 2));
};

/**
 * Holds the reply of the next read of a record (as GET /records/{id} reads it, with its caller)
 * after D1 answered it, until released.
 * Both sides poll a flag: a promise resolved from another request's context would never wake
 * the request that awaits it.
 */
function holdNextRead(): { answered: Promise<void>; release: () => void } {
  const state = { answered: false, released: false };
  Store.prototype.readableRecord = async function (this: Store, ...args: Parameters<Store['readableRecord']>) {
    Store.prototype.readableRecord = original;
    const read = await original.apply(this, args);
    state.answered = true;
    await until(() => state.released);
    return read;
  };
  return { answered: until(() => state.answered), release: () => void (state.released = true) };
}

/** Holds the reply of the next record write D1 committed, until released (polling, as above). */
function holdNextCommit(): { committed: Promise<void>; release: () => void } {
  const state = { committed: false, released: false };
  RecordWrites.prototype.commit = async function (this: RecordWrites, ...args: Parameters<RecordWrites['commit']>) {
    RecordWrites.prototype.commit = originalCommit;
    const result = await originalCommit.apply(this, args);
    state.committed = true;
    await until(() => state.released);
    return result;
  } as RecordWrites['commit'];
  return { committed: until(() => state.committed), release: () => void (state.released = true) };
}

describe('a write answers as its caller was when it was admitted', () => {
  for (const action of ['patch', 'delete'] as const)
    it(`a ${action} whose key is revoked as it commits answers without the fields the role hides`, async () => {
      const { owner, member, workspaceId, mine } = await roleWorld();
      const [{ id: keyId }] = (await admin('GET', `/admin/users/${member.id}/keys`)).body;
      const held = holdNextCommit();
      const path = `/workspaces/${workspaceId}/records/${mine.id}`;
      const write =
        action === 'patch'
          ? call('PATCH', path, { key: member.key, body: { fieldValues: [fv('note', 'changed')] } })
          : call('DELETE', path, { key: member.key });
      await held.committed;
      expect((await admin('DELETE', `/admin/keys/${keyId}`)).status).toBe(204);
      held.release();
      const answer = await write;
      expect(answer.status).toBe(200);
      const names = answer.body.fieldValues.map((value: { fieldName: string }) => value.fieldName);
      expect(names).toContain('title');
      expect(names).not.toContain('salary');
      expect(names).not.toContain('link');
      // The write stands, whole, as the owner reads it.
      const read = await call('GET', `/records/${mine.id}`, { key: owner.key });
      expect(read.body.version).toBe(answer.body.version);
      expect(read.body.fieldValues).toContainEqual(fv('salary', 5));
      expect(read.body.deleted).toBe(action === 'delete');
    });
});

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
