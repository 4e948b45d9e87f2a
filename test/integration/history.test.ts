import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { FEED_RETENTION_MS } from '../../src/storage/lists.ts';
import { call, createOne, expectProblem, fv, newUser, runScheduled, world, type Answer } from './helpers.ts';

const history = (key: string, id: number | string, query = ''): Promise<Answer> =>
  call('GET', `/records/${id}/history${query}`, { key });

/** A record created, patched twice (a value changed, one added, one removed), deleted and restored. */
async function livedRecord() {
  const w = await world();
  const other = await newUser('other');
  await call('PUT', `/admin/workspaces/${w.workspaceId}/members/${other.id}`, {
    key: 'test-admin-token',
    body: { role: 'editor' },
  });
  const created = await createOne(w.editor.key, w.object.id, [fv('firstName', 'Ada'), fv('stage', 'lead')]);
  const path = `/workspaces/${w.workspaceId}/records/${created.id}`;
  const first = await call('PATCH', path, {
    key: w.editor.key,
    body: { fieldValues: [fv('stage', 'customer'), fv('age', 36)] },
  });
  const second = await call('PATCH', path, {
    key: other.key,
    body: { fieldValues: [fv('age', null), fv('tags', ['a', 'b'])] },
  });
  const deleted = await call('DELETE', path, { key: other.key });
  const restored = await call('POST', `${path}/restore`, { key: w.editor.key });
  for (const answer of [first, second, deleted, restored]) expect(answer.status).toBe(200);
  return {
    ...w,
    other,
    created,
    first: first.body,
    second: second.body,
    deleted: deleted.body,
    restored: restored.body,
  };
}

describe('GET /records/{id}/history', () => {
  it('lists every change newest first, each with its version, time, author, type and fields from and to', async () => {
    const { editor, other, created, first, second, deleted, restored } = await livedRecord();
    const answer = await history(editor.key, created.id);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      items: [
        { version: 5, at: restored.updatedAt, by: editor.id, type: 'restored', changes: [] },
        { version: 4, at: deleted.updatedAt, by: other.id, type: 'deleted', changes: [] },
        {
          version: 3,
          at: second.updatedAt,
          by: other.id,
          type: 'updated',
          changes: [
            { fieldName: 'tags', from: null, to: ['a', 'b'] },
            { fieldName: 'age', from: 36, to: null },
          ],
        },
        {
          version: 2,
          at: first.updatedAt,
          by: editor.id,
          type: 'updated',
          changes: [
            { fieldName: 'age', from: null, to: 36 },
            { fieldName: 'stage', from: 'lead', to: 'customer' },
          ],
        },
        {
          version: 1,
          at: created.createdAt,
          by: editor.id,
          type: 'created',
          changes: [
            { fieldName: 'firstName', from: null, to: 'Ada' },
            { fieldName: 'stage', from: null, to: 'lead' },
          ],
        },
      ],
      nextCursor: null,
    });
    expect(restored.version).toBe(5);
  });

  it('pages by a cursor: each change once, in order, the last page ending with a null cursor', async () => {
    const { editor, workspaceId, created } = await livedRecord();
    const versions: number[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const page: Answer = await history(editor.key, created.id, query);
      expect(page.status).toBe(200);
      versions.push(...page.body.items.map((item: { version: number }) => item.version));
      pages.push(page.body.items.length);
      cursor = page.body.nextCursor;
    } while (cursor !== null);
    expect(versions).toEqual([5, 4, 3, 2, 1]);
    expect(pages).toEqual([2, 2, 1]);
    // The page after the first begins where that one ended, even after more changes came.
    const firstPage = await history(editor.key, created.id, '?limit=2');
    await call('PATCH', `/workspaces/${workspaceId}/records/${created.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('age', 1)] },
    });
    const next = await history(
      editor.key,
      created.id,
      `?limit=2&cursor=${encodeURIComponent(firstPage.body.nextCursor)}`,
    );
    expect(next.body.items.map((item: { version: number }) => item.version)).toEqual([3, 2]);
  });

  it("refuses a cursor of another record's history, a forged one and a bad limit, naming the query", async () => {
    const { editor, object, created } = await livedRecord();
    const elsewhere = await createOne(editor.key, object.id, [fv('firstName', 'Bo')]);
    const { nextCursor } = (await history(editor.key, created.id, '?limit=1')).body;
    const moved = await history(editor.key, elsewhere.id, `?cursor=${encodeURIComponent(nextCursor)}`);
    expectProblem(moved, 400, 'invalid_request');
    expect(moved.body.errors).toEqual([expect.objectContaining({ query: 'cursor' })]);
    const forged = await history(editor.key, created.id, `?cursor=${encodeURIComponent(`${nextCursor}x`)}`);
    expectProblem(forged, 400, 'invalid_request');
    const limit = await history(editor.key, created.id, '?limit=0');
    expectProblem(limit, 400, 'invalid_request');
    expect(limit.body.errors).toEqual([expect.objectContaining({ query: 'limit' })]);
  });

  it('is open to whoever may read the record; to others it answers exactly as an id that does not exist', async () => {
    const { viewer, stranger, created } = await livedRecord();
    const seen = await history(viewer.key, created.id);
    expect(seen.body.items.map((item: { type: string }) => item.type)).toEqual([
      'restored',
      'deleted',
      'updated',
      'updated',
      'created',
    ]);
    const hidden = await history(stranger.key, created.id);
    const missing = await history(stranger.key, 9_000_000_000_000);
    expectProblem(hidden, 404, 'not_found');
    expect(hidden.body).toEqual(missing.body);
    expect(hidden.headers.get('Server-Timing')?.replace(/dur=[0-9.]+/g, '')).toBe(
      missing.headers.get('Server-Timing')?.replace(/dur=[0-9.]+/g, ''),
    );
    expectProblem(await history('no-such-key', created.id), 401, 'unauthorized');
    expectProblem(await history(viewer.key, 'abc'), 400, 'invalid_request');
  });

  it('keeps changes as long as the feed: 7 days, or longer when CHANGE_RETENTION_DAYS says so', async () => {
    const { editor, workspaceId, created } = await livedRecord();
    // Age every change so far by 10 days, then add a fresh one.
    await env.DB.prepare('UPDATE changes SET at = at - ?')
      .bind(10 * 24 * 60 * 60 * 1000)
      .run();
    const fresh = await call('PATCH', `/workspaces/${workspaceId}/records/${created.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('age', 7)] },
    });
    await runScheduled({ CHANGE_RETENTION_DAYS: '30' });
    expect((await history(editor.key, created.id)).body.items.map((i: { version: number }) => i.version)).toEqual([
      6, 5, 4, 3, 2, 1,
    ]);
    await runScheduled();
    const kept = await history(editor.key, created.id);
    expect(kept.body).toEqual({
      items: [
        {
          version: 6,
          at: fresh.body.updatedAt,
          by: editor.id,
          type: 'updated',
          changes: [{ fieldName: 'age', from: null, to: 7 }],
        },
      ],
      nextCursor: null,
    });
    expect(FEED_RETENTION_MS).toBe(7 * 24 * 60 * 60 * 1000);
  });
});
