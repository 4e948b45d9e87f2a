import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { FEED_RETENTION_MS } from '../../src/storage/lists.ts';
import {
  admin,
  call,
  createOne,
  expectProblem,
  newObject,
  newWorkspace,
  world,
  byName,
  foldFeed,
  runScheduled,
} from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

async function createMany(
  key: string,
  objectId: number,
  n: number,
  values: (i: number) => unknown[] = (i) => [fv('firstName', `R${i}`)],
): Promise<any[]> {
  const records = [];
  for (let start = 0; start < n; start += 20) {
    const body = Array.from({ length: Math.min(20, n - start) }, (_, j) => ({
      objectId,
      fieldValues: values(start + j),
    }));
    const res = await call('POST', '/records/batch', { key, body });
    records.push(...res.body.map((item: any) => item.record));
  }
  return records;
}

/** Every page of a list, following nextCursor. */
async function walk(
  key: string,
  path: string,
  pause: () => Promise<void> = async () => {},
): Promise<{ ids: number[]; pages: number }> {
  const ids: number[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res: any = await call(
      'GET',
      `${path}${cursor === null ? '' : `${sep}cursor=${encodeURIComponent(cursor)}`}`,
      { key },
    );
    if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
    ids.push(...res.body.items.map((r: any) => r.id));
    cursor = res.body.nextCursor;
    pages++;
    await pause();
  } while (cursor !== null);
  return { ids, pages };
}

describe('GET /workspaces/{id}/records', () => {
  it('pages by id with opaque cursors; limit bounds; other workspaces never appear; non-members 404', async () => {
    const { editor, viewer, stranger, workspaceId, object } = await world();
    const records = await createMany(editor.key, object.id, 12);
    const otherWs = await newWorkspace({ [editor.id]: 'editor' });
    const otherObject = await newObject([otherWs]);
    await createMany(editor.key, otherObject.id, 3);
    const first = await call('GET', `/workspaces/${workspaceId}/records?limit=5`, { key: viewer.key });
    expect(first.status).toBe(200);
    expect(first.body.items).toEqual(records.slice(0, 5));
    expect(typeof first.body.nextCursor).toBe('string');
    const all = await walk(viewer.key, `/workspaces/${workspaceId}/records?limit=5`);
    expect(all).toEqual({ ids: records.map((r) => r.id), pages: 3 });
    expect((await call('GET', `/workspaces/${workspaceId}/records`, { key: editor.key })).body.items).toHaveLength(12);
    for (const limit of ['0', '101', 'x', '1.5']) {
      const res = await call('GET', `/workspaces/${workspaceId}/records?limit=${limit}`, { key: editor.key });
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.errors[0]).toMatchObject({ query: 'limit' });
    }
    expect((await call('GET', `/workspaces/${workspaceId}/records?limit=100`, { key: editor.key })).status).toBe(200);
    expectProblem(await call('GET', `/workspaces/${workspaceId}/records`, { key: stranger.key }), 404, 'not_found');
    expectProblem(await call('GET', `/workspaces/${workspaceId}/records`, { key: 'nope' }), 401, 'unauthorized');
    expectProblem(
      await call('GET', `/workspaces/${workspaceId}/records?colour=red`, { key: editor.key }),
      400,
      'invalid_request',
    );
  });

  it('refuses a forged, edited or borrowed cursor with 400 naming it', async () => {
    const { editor, workspaceId, object } = await world();
    await createMany(editor.key, object.id, 4);
    const page = await call('GET', `/workspaces/${workspaceId}/records?limit=2`, { key: editor.key });
    const cursor: string = page.body.nextCursor;
    const [head, mac] = cursor.split('.') as [string, string];
    const forged = [`${btoa('1').replaceAll('=', '')}.${mac}`, `${head}.${mac.slice(0, -2)}AA`, 'garbage', `${head}`];
    for (const bad of forged) {
      const res = await call('GET', `/workspaces/${workspaceId}/records?limit=2&cursor=${encodeURIComponent(bad)}`, {
        key: editor.key,
      });
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.errors).toEqual([
        { query: 'cursor', code: 'invalid_cursor', message: 'not a cursor this service issued for this query' },
      ]);
    }
    // The same cursor with other filters is another walk: refused too.
    expectProblem(
      await call(
        'GET',
        `/workspaces/${workspaceId}/records?limit=2&deleted=include&cursor=${encodeURIComponent(cursor)}`,
        { key: editor.key },
      ),
      400,
      'invalid_request',
    );
    expect(
      (
        await call('GET', `/workspaces/${workspaceId}/records?limit=2&cursor=${encodeURIComponent(cursor)}`, {
          key: editor.key,
        })
      ).status,
    ).toBe(200);
  });

  it('filters by objectId, deleted, updatedAfter and field values (ANDed)', async () => {
    const { editor, workspaceId, object } = await world();
    const second = await newObject([workspaceId], { name: 'Other' });
    const contacts = await createMany(editor.key, object.id, 6, (i) => [
      fv('firstName', `C${i}`),
      fv('age', i % 3),
      fv('stage', i % 2 === 0 ? 'lead' : 'customer'),
      fv('tags', i === 4 ? ['a', 'b'] : ['c']),
    ]);
    const others = await createMany(editor.key, second.id, 2);
    const list = async (query: string) =>
      (await call('GET', `/workspaces/${workspaceId}/records?${query}`, { key: editor.key })).body.items.map(
        (r: any) => r.id,
      );
    expect(await list(`objectId=${second.id}`)).toEqual(others.map((r) => r.id));
    expect(await list('field.stage=lead')).toEqual([0, 2, 4].map((i) => contacts[i].id));
    expect(await list('field.stage=lead&field.age=1')).toEqual([contacts[4].id]);
    expect(await list('field.age=0')).toEqual([0, 3].map((i) => contacts[i].id));
    expect(await list(`field.tags=${encodeURIComponent('["a","b"]')}`)).toEqual([contacts[4].id]);
    expect(await list('field.firstName=C5')).toEqual([contacts[5].id]);
    expect(await list('field.nothing=x')).toEqual([]);
    await call('DELETE', `/workspaces/${workspaceId}/records/${contacts[1].id}`, { key: editor.key });
    expect(await list(`objectId=${object.id}`)).not.toContain(contacts[1].id);
    expect(await list('deleted=only')).toEqual([contacts[1].id]);
    expect(await list('deleted=include')).toHaveLength(8);
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${contacts[2].id}`, {
      key: editor.key,
      body: { fieldValues: [fv('age', 9)] },
    });
    expect(await list(`updatedAfter=${patched.body.updatedAt - 1}`)).toEqual([contacts[2].id]);
    for (const bad of ['deleted=maybe', 'objectId=-1', 'updatedAfter=soon', 'field.1x=2', 'objectId=1&objectId=2']) {
      const res = await call('GET', `/workspaces/${workspaceId}/records?${bad}`, { key: editor.key });
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.errors[0].query).toBeDefined();
    }
  });

  it(
    'a walk of 250 records in pages of 7, while others create, patch and delete, sees every record that existed ' +
      'throughout exactly once',
    { timeout: 60_000 },
    async () => {
      const { editor, workspaceId, object } = await world();
      const records = await createMany(editor.key, object.id, 250);
      const doomed = new Set(records.filter((_, i) => i % 10 === 3).map((r) => r.id));
      let round = 0;
      // Between pages: a create, a patch of a record ahead and of one behind, and a delete.
      const meddle = async () => {
        round++;
        await createOne(editor.key, object.id, [fv('firstName', `new${round}`)]);
        const ahead = records[(round * 13) % 250];
        await call('PATCH', `/workspaces/${workspaceId}/records/${ahead.id}`, {
          key: editor.key,
          body: { fieldValues: [fv('age', round)] },
        });
        const victim = [...doomed][round % doomed.size];
        if (victim !== undefined)
          await call('DELETE', `/workspaces/${workspaceId}/records/${victim}`, { key: editor.key });
      };
      const { ids } = await walk(editor.key, `/workspaces/${workspaceId}/records?limit=7`, meddle);
      expect(new Set(ids).size).toBe(ids.length);
      const seen = new Set(ids);
      for (const record of records) if (!doomed.has(record.id)) expect(seen.has(record.id)).toBe(true);
    },
  );
});

describe('GET /workspaces/{id}/changes', () => {
  it(
    "lists the workspace's committed changes in commit order; resuming from any cursor gives exactly " + 'the rest',
    async () => {
      const { editor, viewer, stranger, workspaceId, object } = await world();
      const elsewhere = await newWorkspace({ [editor.id]: 'editor' });
      const foreign = await newObject([elsewhere]);
      const answers: { type: string; record: any }[] = [];
      const [a, b] = await createMany(editor.key, object.id, 2);
      answers.push({ type: 'created', record: a }, { type: 'created', record: b });
      await createOne(editor.key, foreign.id, [fv('firstName', 'Z')]); // another workspace's record
      const path = (id: number) => `/workspaces/${workspaceId}/records/${id}`;
      answers.push({
        type: 'updated',
        record: (await call('PATCH', path(a.id), { key: editor.key, body: { fieldValues: [fv('age', 1)] } })).body,
      });
      // A no-op: not a change.
      await call('PATCH', path(a.id), { key: editor.key, body: { fieldValues: [fv('age', 1)] } });
      const batch = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [
          { id: a.id, fieldValues: [fv('age', 2)] },
          { id: b.id, fieldValues: [fv('age', 2)] },
        ],
      });
      answers.push(...batch.body.map((item: any) => ({ type: 'updated', record: item.record })));
      expect(
        (
          await call('PATCH', '/records/batch', {
            key: editor.key,
            body: [
              { id: a.id, fieldValues: [fv('age', 3)] },
              { id: b.id, fieldValues: [fv('nope', 1)] },
            ],
          })
        ).status,
      ).toBe(422);
      answers.push({ type: 'deleted', record: (await call('DELETE', path(b.id), { key: editor.key })).body });
      answers.push({
        type: 'restored',
        record: (await call('POST', `${path(b.id)}/restore`, { key: editor.key })).body,
      });

      const feed = await call('GET', `/workspaces/${workspaceId}/changes`, { key: viewer.key });
      expect(feed.status).toBe(200);
      // Folding the items rebuilds every answered state; an update carries only what changed.
      expect(feed.body.items.map((item: any) => item.type)).toEqual(answers.map((a) => a.type));
      expect(foldFeed(feed.body.items)).toEqual(answers.map((a) => byName(a.record)));
      expect(feed.body.items[2]).toMatchObject({
        type: 'updated',
        recordId: a.id,
        version: 2,
        fieldValues: [fv('age', 1)],
      });
      expect(feed.body.items[2].record).toBeUndefined();
      expect(feed.body.items.every((item: any) => item.by === editor.id)).toBe(true);
      expect(feed.body.nextCursor).toBe(feed.body.items.at(-1).cursor);
      for (let i = 0; i < answers.length; i++) {
        const rest = await call(
          'GET',
          `/workspaces/${workspaceId}/changes?after=${encodeURIComponent(feed.body.items[i].cursor)}`,
          { key: viewer.key },
        );
        expect(rest.body.items).toEqual(feed.body.items.slice(i + 1));
      }
      // Paged: limit 3 walks the same items.
      const paged: any[] = [];
      let after = '';
      for (;;) {
        const page = await call('GET', `/workspaces/${workspaceId}/changes?limit=3${after}`, { key: viewer.key });
        paged.push(...page.body.items);
        if (page.body.items.length === 0) break;
        after = `&after=${encodeURIComponent(page.body.nextCursor)}`;
      }
      expect(paged).toEqual(feed.body.items);
      expectProblem(await call('GET', `/workspaces/${workspaceId}/changes`, { key: stranger.key }), 404, 'not_found');
      expectProblem(
        await call('GET', `/workspaces/${workspaceId}/changes?limit=1001`, { key: viewer.key }),
        400,
        'invalid_request',
      );
      expectProblem(
        await call('GET', `/workspaces/${workspaceId}/changes?after=abc`, { key: viewer.key }),
        400,
        'invalid_request',
      );
      // A cursor of another workspace's feed is not one of this feed's.
      const theirs = await call('GET', `/workspaces/${elsewhere}/changes`, { key: editor.key });
      expect(theirs.body.items.map((item: any) => item.record?.name)).toEqual(['Z']);
      expectProblem(
        await call('GET', `/workspaces/${workspaceId}/changes?after=${encodeURIComponent(theirs.body.nextCursor)}`, {
          key: editor.key,
        }),
        400,
        'invalid_request',
      );
    },
  );

  it(
    'a change is in the feed when its write answers; past retention the scheduled prune removes it and ' +
      'an older cursor is 410',
    async () => {
      const { editor, workspaceId, object } = await world();
      const old = await createOne(editor.key, object.id, [fv('firstName', 'Old')]);
      const start = await call('GET', `/workspaces/${workspaceId}/changes`, { key: editor.key });
      const before = start.body.items.at(-1).cursor;
      const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${old.id}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 1)] },
      });
      const seen = await call('GET', `/workspaces/${workspaceId}/changes?after=${encodeURIComponent(before)}`, {
        key: editor.key,
      });
      expect(seen.body.items.map((item: any) => [item.recordId, item.version, item.fieldValues])).toEqual([
        [old.id, patched.body.version, [fv('age', 1)]],
      ]);
      // Age every change so far past retention, then add a fresh one.
      await env.DB.prepare('UPDATE changes SET at = at - ?')
        .bind(FEED_RETENTION_MS + 60_000)
        .run();
      const fresh = await call('PATCH', `/workspaces/${workspaceId}/records/${old.id}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 2)] },
      });
      await runScheduled();
      const kept = await call('GET', `/workspaces/${workspaceId}/changes`, { key: editor.key });
      expect(kept.body.items.map((item: any) => [item.recordId, item.version, item.at, item.fieldValues])).toEqual([
        [old.id, fresh.body.version, fresh.body.updatedAt, [fv('age', 2)]],
      ]);
      const gone = await call('GET', `/workspaces/${workspaceId}/changes?after=${encodeURIComponent(before)}`, {
        key: editor.key,
      });
      expectProblem(gone, 410, 'gone');
      expect(gone.body.errors[0]).toMatchObject({ query: 'after' });
      // An empty page keeps the caller's place.
      const tail = await call(
        'GET',
        `/workspaces/${workspaceId}/changes?after=${encodeURIComponent(kept.body.nextCursor)}`,
        { key: editor.key },
      );
      expect(tail.body).toEqual({ items: [], nextCursor: kept.body.nextCursor });
    },
  );
});

describe('GET /me', () => {
  it('answers the caller and their memberships, in workspace order', async () => {
    const { editor, workspaceId } = await world();
    const second = await newWorkspace({ [editor.id]: 'viewer' });
    const me = await call('GET', '/me', { key: editor.key });
    expect(me.body).toEqual({
      userId: editor.id,
      name: 'editor',
      admin: false,
      workspaces: [
        { workspaceId, name: 'ws', role: 'editor' },
        { workspaceId: second, name: 'ws', role: 'viewer' },
      ],
    });
    await admin('DELETE', `/admin/workspaces/${second}/members/${editor.id}`);
    expect((await call('GET', '/me', { key: editor.key })).body.workspaces).toEqual([
      { workspaceId, name: 'ws', role: 'editor' },
    ]);
    expectProblem(await call('GET', '/me', { key: 'nope' }), 401, 'unauthorized');
  });
});

describe('GET /workspaces/{id}/changes?start=latest', () => {
  it('answers no items and a cursor after the newest change: only what comes next follows it', async () => {
    const { editor, stranger, workspaceId, object } = await world();
    await createOne(editor.key, object.id, [fv('firstName', 'Before')]);
    const latest = await call('GET', `/workspaces/${workspaceId}/changes?start=latest`, { key: editor.key });
    expect(latest.status).toBe(200);
    expect(latest.body.items).toEqual([]);
    const after = await createOne(editor.key, object.id, [fv('firstName', 'After')]);
    const next = await call(
      'GET',
      `/workspaces/${workspaceId}/changes?after=${encodeURIComponent(latest.body.nextCursor)}`,
      {
        key: editor.key,
      },
    );
    expect(next.body.items.map((item: any) => [item.type, item.recordId])).toEqual([['created', after.id]]);
    const both = await call('GET', `/workspaces/${workspaceId}/changes?start=latest&after=${latest.body.nextCursor}`, {
      key: editor.key,
    });
    expectProblem(both, 400, 'invalid_request');
    expect(both.body.errors).toEqual([expect.objectContaining({ query: 'start' })]);
    expectProblem(
      await call('GET', `/workspaces/${workspaceId}/changes?start=newest`, { key: editor.key }),
      400,
      'invalid_request',
    );
    expectProblem(
      await call('GET', `/workspaces/${workspaceId}/changes?start=latest`, { key: stranger.key }),
      404,
      'not_found',
    );
  });
});

describe('GET /workspaces/{id}/objects', () => {
  it("answers the current definitions of the workspace's objects to its members, viewers too, by id", async () => {
    const { editor, viewer, stranger, workspaceId, object } = await world();
    const second = await newObject([workspaceId], { name: 'Deal', nameTemplate: '{firstName}' });
    await newObject([await newWorkspace()], { name: 'Elsewhere' });
    const changed = await admin('PUT', `/admin/objects/${object.id}`, {
      name: 'Contact',
      workspaceIds: [workspaceId],
      fields: [...object.fields, { name: 'city', type: 'text' }],
    });
    expect(changed.status).toBe(200);
    const listed = await call('GET', `/workspaces/${workspaceId}/objects`, { key: viewer.key });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      items: [(await admin('GET', `/admin/objects/${object.id}`)).body, second],
      nextCursor: null,
    });
    expect(listed.body.items[0].version).toBe(2);
    const first = await call('GET', `/workspaces/${workspaceId}/objects?limit=1`, { key: editor.key });
    expect(first.body.items.map((o: { id: number }) => o.id)).toEqual([object.id]);
    const rest = await call(
      'GET',
      `/workspaces/${workspaceId}/objects?limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`,
      { key: editor.key },
    );
    expect(rest.body).toEqual({ items: [second], nextCursor: null });
    const hidden = await call('GET', `/workspaces/${workspaceId}/objects`, { key: stranger.key });
    expectProblem(hidden, 404, 'not_found');
    expect(hidden.body).toEqual((await call('GET', '/workspaces/999999999/objects', { key: stranger.key })).body);
  });
});
