import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call, createOne, newObject, newWorkspace, world, type Answer } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

/** D1's own count of rows, from `Server-Timing: rows;desc="<written> written, <read> read"`. */
function rows(answer: Answer): { written: number; read: number } {
  const match = /rows;desc="(\d+) written, (\d+) read"/.exec(answer.headers.get('Server-Timing') ?? '');
  if (match === null) throw new Error(`no rows in Server-Timing: ${answer.headers.get('Server-Timing')}`);
  return { written: Number(match[1]), read: Number(match[2]) };
}

/** The database's size in bytes, as D1 reports it after a statement. */
async function databaseBytes(): Promise<number> {
  const result = await env.DB.prepare('SELECT 1').run();
  return (result.meta as { size_after: number }).size_after;
}

describe('what a write costs: storage grows with what it changed, and rows written stay within budget', () => {
  it('200 one-field patches of a 20 KB record add at most 1 KB each to the database', { timeout: 60_000 }, async () => {
    const { editor, workspaceId } = await world();
    const object = await newObject([workspaceId], {
      nameTemplate: '{title}',
      fields: [
        { name: 'title', type: 'text' },
        { name: 'body', type: 'text' },
        { name: 'n', type: 'integer' },
      ],
    });
    const record = await createOne(editor.key, object.id, [
      fv('title', 'big'),
      fv('body', 'x'.repeat(20_000)),
      fv('n', 0),
    ]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('n', -1)] } });
    const before = await databaseBytes();
    for (let n = 1; n <= 200; n++) {
      const res = await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('n', n)] } });
      expect(res.body.version).toBe(n + 2);
    }
    const added = (await databaseBytes()) - before;
    console.log(
      JSON.stringify({ storage: { patches: 200, recordBytes: 20_000, bytesAdded: added, perPatch: added / 200 } }),
    );
    expect(added / 200).toBeLessThanOrEqual(1024);
    // Every version is still rebuilt exactly: the feed folds to the stored record.
    const stored = (await call('GET', path, { key: editor.key })).body;
    expect(stored.fieldValues).toEqual([fv('title', 'big'), fv('body', 'x'.repeat(20_000)), fv('n', 200)]);
  });

  it(
    'rows written per operation, from D1: a patch at most 6 (8 with a key), a batch of 20 at most 6 a ' +
      'record, a create of a two-word name at most 20 a record and its ledger row; another workspace adds a row',
    async () => {
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'a')]);
      const path = `/workspaces/${workspaceId}/records/${record.id}`;
      await call('GET', path, { key: editor.key }); // in use: remembered by the Worker
      const patch = await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 1)] } });
      const keyed = await call('PATCH', path, {
        key: editor.key,
        body: { fieldValues: [fv('age', 2)] },
        headers: { 'Idempotency-Key': 'cost' },
      });
      const created = await call('POST', '/records/batch', {
        key: editor.key,
        body: Array.from({ length: 20 }, (_, i) => ({
          objectId: object.id,
          fieldValues: [fv('firstName', `Annabel${i}`), fv('lastName', 'Smithson')],
        })),
      });
      const ids = created.body.map((item: any) => item.record.id);
      const batch = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: ids.map((id: number) => ({ id, fieldValues: [fv('age', 3)] })),
      });
      // A record shared with a second workspace: its update time is kept in each.
      const other = await newWorkspace({ [editor.id]: 'editor' });
      await admin('PUT', `/admin/objects/${object.id}`, {
        name: 'Contact',
        workspaceIds: [workspaceId, other],
        nameTemplate: '{firstName} {lastName}',
        fields: object.fields,
      });
      // A record created now is shared with both workspaces of its object.
      const shared = await createOne(editor.key, object.id, [fv('firstName', 'b')]);
      expect(shared.sharedWorkspaceIds).toEqual([workspaceId, other]);
      const sharedPath = `/workspaces/${workspaceId}/records/${shared.id}`;
      await call('GET', sharedPath, { key: editor.key });
      const twice = await call('PATCH', sharedPath, { key: editor.key, body: { fieldValues: [fv('age', 1)] } });
      const figures = {
        patch: rows(patch),
        keyed: rows(keyed),
        create20: rows(created),
        batch20: rows(batch),
        sharedPatch: rows(twice),
      };
      console.log(JSON.stringify({ rowsWritten: figures }));
      expect([patch.status, keyed.status, created.status, batch.status, twice.status]).toEqual([
        200, 200, 201, 200, 200,
      ]);
      expect(figures.patch.written).toBeLessThanOrEqual(6);
      expect(figures.keyed.written).toBeLessThanOrEqual(8);
      expect(figures.create20.written).toBeLessThanOrEqual(20 * 20 + 1);
      expect(figures.batch20.written).toBeLessThanOrEqual(6 * 20);
      expect(figures.sharedPatch.written).toBe(figures.patch.written + 1);
      expect(figures.patch.written).toBeGreaterThan(0);
    },
  );
});
