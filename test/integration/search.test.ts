import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/json.ts';
import { relevanceOf, searchKey, searchWords } from '../../src/domain/query.ts';
import { cursorKey, signPosition } from '../../src/http/cursor.ts';
import { storedCursorKey } from '../../src/storage/cursor-key.ts';
import { Meter } from '../../src/storage/meter.ts';
import { SCAN_BOUND } from '../../src/storage/query.ts';
import {
  bulkRecords,
  call,
  createOne,
  expectProblem,
  queryRecords,
  walkQuery,
  runScheduled,
  fv,
  objectIn,
} from './helpers.ts';

const setup = () =>
  objectIn({
    name: 'Company',
    nameTemplate: '{title}',
    fields: [
      { name: 'title', type: 'text' },
      { name: 'size', type: 'integer', indexed: true },
    ],
  });

describe('search by name: relevance, sorts, counts', () => {
  it('answers a search without a sort by relevance, then id, across pages', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    // Created in an order unlike the relevance order.
    const titles = ['Big Acmeco', 'Zed ACME', 'Acmeville Store', 'Acme Corp', 'Ácme', 'Other'];
    const made = new Map<string, number>();
    for (const [i, title] of titles.entries())
      made.set(title, (await createOne(editor.key, object.id, [fv('title', title), fv('size', i)])).id);
    const named = (ids: number[]) => ids.map((id) => [...made].find(([, m]) => m === id)?.[0]);
    // The exact name; names holding the word whole (by id); names with a word it starts (by id).
    const expected = ['Ácme', 'Zed ACME', 'Acme Corp', 'Big Acmeco', 'Acmeville Store'];
    for (const limit of [1, 2, 50]) {
      const { ids } = await walkQuery(viewer.key, workspaceId, { search: 'acme', limit });
      expect(named(ids)).toEqual(expected);
    }
    // The same order as the pure rule says.
    const words = searchWords('acme');
    const ranked = [...titles]
      .filter((t) => t !== 'Other')
      .sort((a, b) => (relevanceOf(a, words) ?? 9) - (relevanceOf(b, words) ?? 9) || made.get(a)! - made.get(b)!);
    expect(ranked).toEqual(expected);
    // Every word must match.
    const both = await queryRecords(viewer.key, workspaceId, { search: 'acme cor' });
    expect(named(both.body.items.map((r: { id: number }) => r.id))).toEqual(['Acme Corp']);
  });

  it('follows a sort when one is sent, filters and counts with a search', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    for (const [i, title] of ['Delta Air', 'Alpha Air', 'Charlie Sea', 'Bravo Air'].entries())
      await createOne(editor.key, object.id, [fv('title', title), fv('size', 10 * (i + 1))]);
    const names = (answer: { body: { items: { name: string }[] } }) => answer.body.items.map((r) => r.name);
    const byName = await queryRecords(viewer.key, workspaceId, { search: 'air', sort: [{ field: 'name' }] });
    expect(byName.status).toBe(200);
    expect(names(byName)).toEqual(['Alpha Air', 'Bravo Air', 'Delta Air']);
    const bySize = await queryRecords(viewer.key, workspaceId, {
      search: 'air',
      sort: [{ field: 'size', direction: 'desc' }],
      filter: { field: 'size', op: 'lt', value: 40 },
      count: true,
    });
    expect(names(bySize)).toEqual(['Alpha Air', 'Delta Air']);
    expect(bySize.body.count).toEqual({ value: 2, exact: true });
    const counted = await queryRecords(viewer.key, workspaceId, { search: 'a', count: true, limit: 1 });
    expect(counted.body.count).toEqual({ value: 3, exact: true });
    expect(counted.body.items).toHaveLength(1);
    // With a contains that folds letters beyond ASCII, by relevance and by a sort, in one read or by tiers.
    const aerzte = await createOne(editor.key, object.id, [fv('title', 'ÄRZTE Air'), fv('size', 1)]);
    for (const sort of [undefined, [{ field: 'name' }]]) {
      const folded = await queryRecords(viewer.key, workspaceId, {
        search: 'air',
        filter: { field: 'title', op: 'contains', value: 'ärz' },
        ...(sort === undefined ? {} : { sort }),
        count: true,
      });
      expect(folded.status).toBe(200);
      expect(folded.body.items.map((r: { id: number }) => r.id)).toEqual([aerzte.id]);
      expect(folded.body.count).toEqual({ value: 1, exact: true });
    }
    expectProblem(await queryRecords(viewer.key, workspaceId, { search: 5 }), 400, 'invalid_request');
  });

  it('a renamed record is found by its new name only', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const record = await createOne(editor.key, object.id, [fv('title', 'Old Name')]);
    const renamed = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('title', 'Nouvelle Société')] },
    });
    expect(renamed.status).toBe(200);
    const ids = async (search: string) =>
      (await queryRecords(viewer.key, workspaceId, { search })).body.items.map((r: { id: number }) => r.id);
    expect(await ids('old')).toEqual([]);
    expect(await ids('societe nouv')).toEqual([record.id]);
    // A batch patch keeps the key too.
    const batch = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: [{ id: record.id, fieldValues: [fv('title', 'Ünïcode Name')] }],
    });
    expect(batch.status).toBe(200);
    expect(await ids('unicode')).toEqual([record.id]);
  });

  it(
    'over more records than a page may read, a relevance walk ends pages early with cursors and sees ' +
      'every match once, in relevance order',
    async () => {
      const { viewer, workspaceId, object } = await setup();
      const n = 2 * SCAN_BOUND + 500;
      await bulkRecords(object.id, workspaceId, n, `json_array(json_object('fieldName', 'title', 'value', 'x'))`);
      const rows = await env.DB.prepare('SELECT id, name FROM records WHERE object_id = ? ORDER BY id')
        .bind(object.id)
        .all<{ id: number; name: string }>();
      const words = searchWords('bulk 7');
      const expected = rows.results
        .filter((r) => /^Bulk 7\d*$/.test(r.name))
        .sort((a, b) => (relevanceOf(a.name, words) ?? 9) - (relevanceOf(b.name, words) ?? 9) || a.id - b.id)
        .map((r) => r.id);
      const walked = await walkQuery(viewer.key, workspaceId, { search: 'bulk 7', limit: 100 });
      expect(walked.ids).toEqual(expected);
      // Every page read a bounded number of rows, whatever the workspace holds.
      console.log(JSON.stringify({ relevanceWalkRowsRead: walked.rowsRead }));
      for (const read of walked.rowsRead.slice(1)) expect(read).toBeLessThan(4 * SCAN_BOUND);
      expect(walked.rowsRead[0]).toBeLessThan(7 * SCAN_BOUND);
      expect(walked.pages).toBeGreaterThan(2);
    },
  );

  it('records written before their keys were kept are found meanwhile, and the scheduled run keys them', async () => {
    const { viewer, workspaceId, object } = await setup();
    await bulkRecords(object.id, workspaceId, 3, `json_array(json_object('fieldName', 'title', 'value', 'x'))`);
    // As a record written before: a name with accents, the key of that time, no terms, no folds.
    const legacy = await env.DB.prepare(
      `UPDATE records SET name = 'Émile Zola #' || id, name_key = 'emile zola ' || id, terms = NULL, folds = NULL,
         version = version + 1
       WHERE object_id = ? AND id = (SELECT max(id) FROM records)
       RETURNING id`,
    )
      .bind(object.id)
      .first<{ id: number }>();
    const ids = async (search: string) =>
      (await queryRecords(viewer.key, workspaceId, { search })).body.items.map((r: { id: number }) => r.id);
    expect(await ids('emile')).toEqual([]);
    // The migration gives such records the terms of the key they have.
    const migration = env.TEST_MIGRATIONS.find((m) => m.name === '0014_keys_per_workspace.sql');
    const terms = migration?.queries.find((query) => query.startsWith('UPDATE records SET terms')) ?? '';
    expect(terms).not.toBe('');
    await env.DB.prepare(terms).run();
    expect(await ids('emile zo')).toEqual([legacy?.id]);
    expect((await ids('bulk')).length).toBe(2);
    await runScheduled();
    const keys = await env.DB.prepare('SELECT name, name_key, folds FROM records WHERE object_id = ? ORDER BY id')
      .bind(object.id)
      .all<{ name: string; name_key: string; folds: string | null }>();
    expect(keys.results.map((r) => r.name_key)).toEqual(keys.results.map((r) => searchKey(r.name)));
    expect(keys.results.map((r) => r.folds)).toEqual([
      '{}',
      '{}',
      JSON.stringify({ '#': `émile zola #${legacy?.id}` }),
    ]);
    expect(await ids('ÉMILE')).toEqual([legacy?.id]);
    expect((await ids('bulk')).length).toBe(2);
  });
});

describe('search edges', () => {
  it('the exact name first, whatever its punctuation; words longer than a term; a search of 600 words', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const name = async (title: string) => (await createOne(editor.key, object.id, [fv('title', title)])).id as number;
    const tDon = await name('T Don');
    const dont = await name("Don't");
    const pi = await name('Pi 3.14');
    const piMore = await name('Pi 3 14 and more');
    const ids = async (body: Record<string, unknown>) => {
      const answer = await queryRecords(viewer.key, workspaceId, body);
      if (answer.status !== 200) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body.items.map((r: { id: number }) => r.id);
    };
    expect(await ids({ search: "Don't" })).toEqual([dont, tDon]);
    expect(await ids({ search: 'pi 3.14' })).toEqual([pi, piMore]);
    // A word longer than a whole word's term (201 letters), and one that folding makes longer.
    const long = await name('ß'.repeat(120));
    const ligatures = await name('ﬃ'.repeat(80));
    expect(await ids({ search: 'ß'.repeat(120) })).toEqual([long]);
    expect(await ids({ search: 'SS'.repeat(100) })).toEqual([long]);
    expect(await ids({ search: 'ﬃ'.repeat(80), sort: [{ field: 'name' }] })).toEqual([ligatures]);
    // 200 characters that decompose to 400 words: the same 4 words, compared once each; and 200
    // without spaces (5 words: the decompositions run together), answered, not a 500.
    const blessing = await name('ﷺ');
    const glued = await queryRecords(viewer.key, workspaceId, { search: 'ﷺ'.repeat(200), count: true });
    expect([glued.status, glued.body.items]).toEqual([200, []]);
    const answer = await queryRecords(viewer.key, workspaceId, { search: 'ﷺ '.repeat(100), count: true });
    expect([answer.status, answer.body.items.map((r: { id: number }) => r.id)]).toEqual([200, [blessing]]);
    expect(answer.body.count).toEqual({ value: 1, exact: true });
  });
});

describe('a sort with a search or an eq that few records meet', () => {
  it("answers full pages: SQL orders the few candidates, however rarely the sort's walk meets them", async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    await bulkRecords(
      object.id,
      workspaceId,
      5_100,
      `json_array(json_object('fieldName', 'title', 'value', 'Smith ' || i),
        json_object('fieldName', 'size', 'value', 1))`,
      `'Smith ' || i`,
    );
    const few: number[] = [];
    for (let i = 0; i < 30; i++)
      few.push((await createOne(editor.key, object.id, [fv('title', `Smithson ${i}`), fv('size', 2)])).id);
    for (const body of [
      { search: 'smithson', sort: [{ field: 'name' }] },
      { filter: { field: 'size', op: 'eq', value: 2 }, sort: [{ field: 'createdAt' }] },
      { filter: { field: 'size', op: 'eq', value: 2 }, sort: [{ field: 'updatedAt', direction: 'desc' }] },
      { search: 'smith', filter: { field: 'size', op: 'eq', value: 2 }, sort: [{ field: 'name', direction: 'desc' }] },
    ]) {
      const first = await queryRecords(viewer.key, workspaceId, { ...body, limit: 20 });
      expect([body, first.body.items.length]).toEqual([body, 20]);
      const walked = await walkQuery(viewer.key, workspaceId, { ...body, limit: 20 });
      expect([body, [...walked.ids].sort((a, b) => a - b)]).toEqual([body, few]);
      expect([body, walked.pages]).toEqual([body, 2]);
    }
  });
});

describe('search keys filled by the Cron Trigger', () => {
  it('fills the keys of long names whose folded words are longer than the names (within D1 limits)', async () => {
    const { editor, workspaceId, object } = await objectIn({
      name: 'Scroll',
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }],
    });
    // U+FDFA is one character whose compatibility form is 18: a 10,000-character name folds to a key
    // of 180,000 characters (two bytes each in UTF-8).
    const ids: number[] = [];
    for (let i = 0; i < 8; i++)
      ids.push((await createOne(editor.key, object.id, [fv('title', `${'\uFDFA'.repeat(9_998)} ${i}`)])).id as number);
    const plain = (await createOne(editor.key, object.id, [fv('title', 'Plain scroll')])).id as number;
    const keys = async () =>
      (
        await env.DB.prepare('SELECT id, name, name_key FROM records WHERE object_id = ? ORDER BY id')
          .bind(object.id)
          .all<{ id: number; name: string; name_key: string | null }>()
      ).results;
    // Each write keyed its own name.
    const unkeyed = async () => (await keys()).filter((r) => r.name_key !== searchKey(r.name)).map((r) => r.id);
    expect(await unkeyed()).toEqual([]);
    // As if written before names had keys.
    await env.DB.prepare('UPDATE records SET name_key = NULL, folds = NULL WHERE object_id = ?').bind(object.id).run();
    await runScheduled();
    expect(await unkeyed()).toEqual([]);
    const found = await walkQuery(editor.key, workspaceId, { search: 'scroll' });
    expect(found.ids).toEqual([plain]);
    const last = await walkQuery(editor.key, workspaceId, { search: 'وسلم 7' });
    expect(last.ids).toEqual([ids[7]]);
  });
});

describe('a search walk begun before searches were answered by relevance', () => {
  it('goes on in id order from a cursor the id-ordered search issued, each match once, and ends', async () => {
    const { editor, workspaceId, object } = await objectIn({
      name: 'Firm',
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }],
    });
    const ids: number[] = [];
    for (const title of ['Acme One', 'Other', 'Acme', 'Big Acme', 'Acmeco'])
      ids.push((await createOne(editor.key, object.id, [fv('title', title)])).id as number);
    const [first, , exact, big, prefix] = ids as [number, number, number, number, number];
    // The cursor a search answered in id order issued after its first match: its position is `[id]`,
    // bound to the same body (filter, search, sort) as a search sent now.
    const body = { search: 'acme', limit: 1 };
    const secret = await cursorKey(env.CURSOR_SECRET, () => storedCursorKey(env.DB, new Meter()));
    const scope = `query/${workspaceId}/${canonicalJson({ filter: null, search: 'acme', sort: null })}`;
    let cursor: string | null = await signPosition(secret, [first], scope);
    const seen: number[] = [];
    for (let page = 0; page < 10 && cursor !== null; page++) {
      const answer = await queryRecords(editor.key, workspaceId, { ...body, cursor });
      expect(answer.status).toBe(200);
      seen.push(...answer.body.items.map((r: { id: number }) => r.id));
      cursor = answer.body.nextCursor as string | null;
    }
    expect(cursor).toBeNull();
    expect(seen).toEqual([exact, big, prefix]);
    // A walk begun now is by relevance.
    expect((await walkQuery(editor.key, workspaceId, body)).ids).toEqual([exact, first, big, prefix]);
  }, 60_000);
});

describe('search keys of long names written in batches', () => {
  it('renames 20 records at once to 10,000-character names that fold to keys 18 times longer', async () => {
    const { editor, workspaceId, object } = await objectIn({
      name: 'Scroll',
      nameTemplate: '{title}',
      fields: [
        { name: 'title', type: 'text' },
        { name: 'n', type: 'integer' },
      ],
    });
    const ids: number[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await createOne(editor.key, object.id, [fv('title', `short ${i}`), fv('n', i)])).id as number);
    const long = (i: number) => `${'\uFDFA'.repeat(9_990)} tail${i}`;
    const patched = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: ids.map((id, i) => ({ id, fieldValues: [fv('title', long(i))] })),
    });
    expect(patched.status).toBe(200);
    const rows = (
      await env.DB.prepare('SELECT id, name, name_key FROM records WHERE object_id = ? ORDER BY id')
        .bind(object.id)
        .all<{ id: number; name: string; name_key: string }>()
    ).results;
    expect(
      rows.filter((r) => r.name_key !== searchKey(r.name) || !r.name.endsWith(' tail' + String(ids.indexOf(r.id)))),
    ).toEqual([]);
    // Found by their new names only, with a projection, a count and a filter.
    const body = { search: 'tail1', fields: ['n'], count: true, filter: { field: 'n', op: 'gte', value: 10 } };
    const found = await queryRecords(editor.key, workspaceId, body);
    expect(found.status).toBe(200);
    expect(found.body.items.map((r: { id: number }) => r.id)).toEqual(ids.slice(10));
    expect(found.body.count).toEqual({ value: 10, exact: true });
    expect(found.body.items[0].fieldValues).toEqual([fv('n', 10)]);
    expect((await walkQuery(editor.key, workspaceId, { search: 'short' })).ids).toEqual([]);
  }, 60_000);
});

describe('search is blind to case beyond lower case', () => {
  it('finds a name by the capitals of its start: a final sigma, a sharp s', async () => {
    const { editor, workspaceId, object } = await objectIn({
      name: 'Place',
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }],
    });
    const sophist = (await createOne(editor.key, object.id, [fv('title', 'ΣΟΦΟΣΤΗΣ Α')])).id as number;
    const street = (await createOne(editor.key, object.id, [fv('title', 'Große Straße')])).id as number;
    await createOne(editor.key, object.id, [fv('title', 'Other')]);
    const ids = async (search: string) => (await walkQuery(editor.key, workspaceId, { search })).ids;
    expect(await ids('ΣΟΦΟΣ')).toEqual([sophist]);
    expect(await ids('GROSSE STRASSE')).toEqual([street]);
    expect(await ids('große strasse')).toEqual([street]);
  });
});

describe('rows written by a patch of a record written before names had keys', () => {
  const written = (answer: { headers: Headers }) =>
    Number(/rows;desc="(\d+) written/.exec(answer.headers.get('Server-Timing') ?? '')?.[1]);

  it('stays within the budget of a patch of one small field, and the patch gives the record its key', async () => {
    const { editor, workspaceId, object } = await objectIn({
      name: 'Note',
      nameTemplate: '{title}',
      fields: [
        { name: 'title', type: 'text' },
        { name: 'n', type: 'integer' },
      ],
    });
    const keyed = (await createOne(editor.key, object.id, [fv('title', 'Kept'), fv('n', 1)])).id as number;
    const older = (await createOne(editor.key, object.id, [fv('title', 'Older'), fv('n', 1)])).id as number;
    await env.DB.prepare('UPDATE records SET name_key = NULL, folds = NULL WHERE id = ?').bind(older).run();
    const patch = (id: number) =>
      call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
        key: editor.key,
        body: { fieldValues: [fv('n', 2)] },
      });
    const a = await patch(keyed);
    const b = await patch(older);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(written(a)).toBeLessThanOrEqual(6);
    expect(written(b)).toBeLessThanOrEqual(6);
    const row = await env.DB.prepare('SELECT name_key FROM records WHERE id = ?')
      .bind(older)
      .first<{ name_key: string }>();
    expect(row?.name_key).toBe('older');
  });
});

describe('deleted records hold no terms', () => {
  it('many deleted matches leave pages full; a query that names deleted finds them, by relevance too', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    await bulkRecords(
      object.id,
      workspaceId,
      5_100,
      `json_array(json_object('fieldName', 'title', 'value', 'Smith ' || i),
        json_object('fieldName', 'size', 'value', i))`,
      `'Smith ' || i`,
    );
    const live: number[] = [];
    for (let i = 0; i < 25; i++) live.push((await createOne(editor.key, object.id, [fv('title', `Smith ${i}`)])).id);
    // Deleted as any delete does (the trigger takes their terms out).
    await env.DB.prepare('UPDATE records SET deleted = 1, version = version + 1 WHERE object_id = ? AND id < ?')
      .bind(object.id, live[0])
      .run();
    for (const body of [{ search: 'smith' }, { search: 'smi', sort: [{ field: 'name' }] }]) {
      const first = await queryRecords(viewer.key, workspaceId, { ...body, limit: 20 });
      expect([body, first.body.items.length]).toEqual([body, 20]);
      const walked = await walkQuery(viewer.key, workspaceId, { ...body, limit: 20 });
      expect([body, [...walked.ids].sort((a, b) => a - b)]).toEqual([body, live]);
    }
    const terms = await env.DB.prepare(
      `SELECT count(*) AS n FROM name_terms
       WHERE record_id IN (SELECT id FROM records WHERE object_id = ? AND deleted = 1)`,
    )
      .bind(object.id)
      .first<{ n: number }>();
    expect(terms?.n).toBe(0);
    // Naming `deleted`: the workspace's records are read (5,000 a page), deleted ones among them.
    const deleted = await walkQuery(viewer.key, workspaceId, {
      search: 'smith 51',
      filter: { field: 'deleted', op: 'eq', value: true },
      limit: 3,
    });
    const names = async (ids: number[]) =>
      (await Promise.all(ids.map((id) => call('GET', `/records/${id}`, { key: viewer.key })))).map(
        (answer) => answer.body.name,
      );
    expect((await names(deleted.ids)).slice(0, 3)).toEqual(['Smith 51', 'Smith 510', 'Smith 511']);
    expect(deleted.ids).toHaveLength(12);
    // A restored record is found again.
    const restored = await call('POST', `/workspaces/${workspaceId}/records/${deleted.ids[0]}/restore`, {
      key: editor.key,
    });
    expect(restored.status).toBe(200);
    const found = await queryRecords(viewer.key, workspaceId, { search: 'smith 51' });
    expect(found.body.items.map((r: { name: string }) => r.name)).toEqual(['Smith 51']);
  });
});
