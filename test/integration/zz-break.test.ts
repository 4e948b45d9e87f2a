import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { nameWords } from '../../src/core/fold.ts';
import { searchTerms } from '../../src/domain/record-keys.ts';
import {
  admin,
  bulkRecords,
  call,
  createOne,
  newUser,
  newWorkspace,
  queryRecords,
  rowsRead,
  walkQuery,
} from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

async function setup(extraFields: Record<string, unknown>[] = [], template = '{title}') {
  const editor = await newUser('editor');
  const viewer = await newUser('viewer');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor', [viewer.id]: 'viewer' });
  const object = (
    await admin('POST', '/admin/objects', {
      name: 'Thing',
      workspaceIds: [workspaceId],
      nameTemplate: template,
      fields: [{ name: 'title', type: 'text' }, { name: 'rank', type: 'integer', indexed: true }, ...extraFields],
    })
  ).body;
  if (object?.id === undefined) throw new Error(JSON.stringify(object));
  return { editor, viewer, workspaceId, object };
}

const ids = (answer: { body: { items: { id: number }[] } }) => answer.body.items.map((r) => r.id);

describe('zz-break phase 1', () => {
  it('A: sort by an indexed field crossing from values to missing: full pages', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const withValue: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < 3; i++)
      withValue.push((await createOne(editor.key, object.id, [fv('title', `v${i}`), fv('rank', i)])).id);
    for (let i = 0; i < 3; i++) without.push((await createOne(editor.key, object.id, [fv('title', `m${i}`)])).id);
    const out: unknown[] = [];
    for (const direction of ['asc', 'desc']) {
      const first = await queryRecords(viewer.key, workspaceId, { sort: [{ field: 'rank', direction }], limit: 5 });
      const walked = await walkQuery(viewer.key, workspaceId, { sort: [{ field: 'rank', direction }], limit: 5 });
      out.push({
        direction,
        firstPage: first.body.items.length,
        next: first.body.nextCursor !== null,
        walked: walked.ids,
        pages: walked.pages,
      });
    }
    console.log('A', JSON.stringify(out), { withValue, without });
    expect(out.map((o: any) => o.firstPage)).toEqual([5, 5]);
  });

  it('B: relevance: the whole name first (apostrophe, CJK)', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const results: Record<string, unknown> = {};
    for (const [other, exact, search] of [
      ['T Don', "Don't", "Don't"],
      ['東京タワー 展望台', '東京タワー', '東京タワー'],
      ['Pi 3 14 and more', 'Pi 3.14', 'pi 3.14'],
      ['foo bar', 'foo_bar', 'foo_bar'],
    ]) {
      const a = await createOne(editor.key, object.id, [fv('title', other)]);
      const b = await createOne(editor.key, object.id, [fv('title', exact)]);
      const found = await queryRecords(viewer.key, workspaceId, { search });
      results[search as string] = {
        expectedFirst: b.id,
        got: ids(found),
        names: found.body.items.map((r: any) => r.name),
      };
    }
    console.log('B', JSON.stringify(results, null, 1));
    for (const r of Object.values(results) as any[]) expect(r.got[0]).toBe(r.expectedFirst);
  });

  it('C: a search of a name whose folded word is longer than 201 letters finds it', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const out: Record<string, unknown> = {};
    for (const [ch, n] of [
      ['ß', 120],
      ['ß', 100],
      ['ﬃ', 80],
      ['ΐ', 70],
    ] as [string, number][]) {
      const name = ch.repeat(n);
      const r = await createOne(editor.key, object.id, [fv('title', name)]);
      const found = await queryRecords(viewer.key, workspaceId, { search: name });
      const sorted = await queryRecords(viewer.key, workspaceId, { search: name, sort: [{ field: 'name' }] });
      out[`${ch}x${n}`] = {
        status: found.status,
        found: ids(found).includes(r.id),
        sorted: sorted.status === 200 && ids(sorted).includes(r.id),
      };
    }
    console.log('C', JSON.stringify(out));
    for (const v of Object.values(out) as any[]) expect(v).toEqual({ status: 200, found: true, sorted: true });
  });

  it('D: unique text compares by the fold, whatever else the record holds', async () => {
    const { editor, viewer, workspaceId, object } = await setup([
      { name: 'big1', type: 'text' },
      { name: 'big2', type: 'text' },
      { name: 'code', type: 'text', unique: true },
      { name: 'note', type: 'text' },
    ]);
    const big1 = 'ΐ'.repeat(100_000); // folds to 300,000 code units
    const big2 = 'ΐ'.repeat(33_333); // 99,999 more
    const a = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        {
          objectId: object.id,
          fieldValues: [
            fv('title', 'A'),
            fv('big1', big1),
            fv('big2', big2),
            fv('code', 'Straße'),
            fv('note', 'ÄRZTE'),
          ],
        },
      ],
    });
    expect(a.status).toBe(201);
    const aId = a.body[0].record.id;
    const stored = await env.DB.prepare(`SELECT unique_key FROM record_index WHERE record_id = ? AND field = 'code'`)
      .bind(aId)
      .first();
    // The same value again, and the same value in other case.
    const same = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'B'), fv('code', 'Straße')] }],
    });
    const upper = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'C'), fv('code', 'STRASSE')] }],
    });
    const upsert = await call('POST', `/objects/${object.id}/records/upsert`, {
      key: editor.key,
      body: { matchOn: 'code', items: [{ fieldValues: [fv('title', 'D'), fv('code', 'STRAßE')] }] },
    });
    const contains = await queryRecords(viewer.key, workspaceId, {
      filter: { field: 'note', op: 'contains', value: 'ärz' },
    });
    const containsCode = await queryRecords(viewer.key, workspaceId, {
      filter: { field: 'code', op: 'contains', value: 'STRASSE' },
    });
    console.log(
      'D',
      JSON.stringify({
        stored,
        same: same.status,
        upper: upper.status,
        upsert: [upsert.status, upsert.body?.[0]?.result],
        contains: ids(contains),
        containsCode: ids(containsCode),
        aId,
      }),
    );
    expect(same.status).toBe(409);
    expect(upper.status).toBe(409);
    expect(upsert.body?.[0]?.result).toBe('updated');
    expect(ids(contains)).toContain(aId);
  });

  it('E/F: stored terms match the recomputation after every kind of write; fallback names', async () => {
    const { editor, viewer, workspaceId, object } = await setup([{ name: 'code', type: 'text', unique: true }]);
    const check = async (id: number, label: string) => {
      const rec = await env.DB.prepare('SELECT name, name_key, terms FROM records WHERE id = ?').bind(id).first<any>();
      const rows = await env.DB.prepare(
        'SELECT term FROM name_terms WHERE record_id = ? AND workspace_id = ? ORDER BY term',
      )
        .bind(id, workspaceId)
        .all<{ term: string }>();
      const expected = searchTerms(nameWords(rec.name)).sort();
      const got = rows.results.map((r) => r.term).sort();
      return {
        label,
        name: rec.name.slice(0, 40),
        key: rec.name_key === nameWords(rec.name).join(' '),
        terms: JSON.stringify(got) === JSON.stringify(expected.sort()),
        missing: expected.filter((t) => !got.includes(t)).slice(0, 5),
        extra: got.filter((t) => !expected.includes(t)).slice(0, 5),
      };
    };
    const out: unknown[] = [];
    const names = [
      "Don't stop",
      '東京タワー',
      '3.14 pie',
      'He said "hi" \\o/',
      '😀😀',
      'ǅemal Ǆ',
      'İstanbul',
      'ΣΟΦΟΣ σοφος',
    ];
    for (const name of names) {
      const r = await createOne(editor.key, object.id, [fv('title', name)]);
      out.push(await check(r.id, 'create'));
    }
    // Fallback name (template renders empty), with an object name that has punctuation.
    const obj2 = (
      await admin('POST', '/admin/objects', {
        name: "Don't Stráße",
        workspaceIds: [workspaceId],
        fields: [{ name: 'x', type: 'text' }],
      })
    ).body;
    const fb = await createOne(editor.key, obj2.id, []);
    out.push(await check(fb.id, 'fallback'));
    const fbSearch = await queryRecords(viewer.key, workspaceId, { search: `strasse ${fb.id}` });
    const fbContains = await queryRecords(viewer.key, workspaceId, {
      filter: { field: 'name', op: 'contains', value: `STRÄSSE`.replace('Ä', 'A') },
    });
    out.push({ fbSearch: ids(fbSearch), fbContains: ids(fbContains), fb: fb.id, name: fb.name });
    // Patch, batch patch, upsert, delete, restore.
    const r = await createOne(editor.key, object.id, [fv('title', 'Alpha Beta'), fv('code', 'k1')]);
    await call('PATCH', `/workspaces/${workspaceId}/records/${r.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('title', 'Gamma Délta')] },
    });
    out.push(await check(r.id, 'patch'));
    await call('PATCH', '/records/batch', {
      key: editor.key,
      body: [{ id: r.id, fieldValues: [fv('title', 'Epsilon Zeta')] }],
    });
    out.push(await check(r.id, 'batch'));
    const up = await call('POST', `/objects/${object.id}/records/upsert`, {
      key: editor.key,
      body: { matchOn: 'code', items: [{ fieldValues: [fv('title', 'Eta Theta'), fv('code', 'K1')] }] },
    });
    out.push({ upsert: up.status, result: up.body?.[0]?.result });
    out.push(await check(r.id, 'upsert'));
    const old = await queryRecords(viewer.key, workspaceId, { search: 'epsilon' });
    const old2 = await queryRecords(viewer.key, workspaceId, { search: 'alpha' });
    const now = await queryRecords(viewer.key, workspaceId, { search: 'theta' });
    out.push({ oldMatches: ids(old), old2: ids(old2), newMatches: ids(now), id: r.id });
    await call('DELETE', `/workspaces/${workspaceId}/records/${r.id}`, { key: editor.key });
    const del = await queryRecords(viewer.key, workspaceId, { search: 'theta' });
    const delInc = await queryRecords(viewer.key, workspaceId, {
      search: 'theta',
      filter: { field: 'deleted', op: 'eq', value: true },
    });
    await call('POST', `/workspaces/${workspaceId}/records/${r.id}/restore`, { key: editor.key });
    const res = await queryRecords(viewer.key, workspaceId, { search: 'theta' });
    out.push({ deleted: ids(del), deletedOnly: ids(delInc), restored: ids(res) });
    out.push(await check(r.id, 'restore'));
    console.log('EF', JSON.stringify(out, null, 1));
  });

  it('G/H: unique folds (ß/ss, sigma, ligatures, Cherokee) and contains beyond ASCII', async () => {
    const { editor, viewer, workspaceId, object } = await setup([
      { name: 'code', type: 'text', unique: true },
      { name: 'mail', type: 'email', unique: true },
    ]);
    const out: unknown[] = [];
    for (const [a, b] of [
      ['Straße', 'STRASSE'],
      ['ΣΟΦΟΣ', 'σοφος'],
      ['ﬁne', 'FINE'],
      ['Ꭰꭰ', 'ꭰᎠ'],
      ['ǅ', 'ǆ'],
      ['İ', 'i̇'],
      ['ẞ', 'ss'],
      ['Åström', 'ÅSTRÖM'],
    ]) {
      const x = await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('title', a), fv('code', a)] }],
      });
      const y = await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('title', b), fv('code', b)] }],
      });
      const c1 = await queryRecords(viewer.key, workspaceId, { filter: { field: 'code', op: 'contains', value: b } });
      const c2 = await queryRecords(viewer.key, workspaceId, { filter: { field: 'name', op: 'contains', value: b } });
      out.push({
        a,
        b,
        first: x.status,
        second: y.status,
        containsCode: c1.body.items?.length,
        containsName: c2.body.items?.length,
      });
    }
    const m1 = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'm'), fv('mail', 'STRAßE@x.de')] }],
    });
    const m2 = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'm'), fv('mail', 'strasse@x.de')] }],
    });
    out.push({ mail: [m1.status, m2.status, m1.body?.[0]?.status ?? m1.body] });
    console.log('GH', JSON.stringify(out, null, 1));
  });

  it('I: search edge cases answer 200 and find what they should', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const out: unknown[] = [];
    const names = [
      'a b c d e f g h i j k l m n o p q r s t u v w x y z',
      'abc abcd abcde',
      'abcd',
      '42nd Street',
      '"quoted" back\\slash',
      '!!!',
      '😀 party',
      '北京大学',
      'x'.repeat(300),
      Array.from({ length: 2500 }, (_, i) => `w${i}`).join(' '),
    ];
    const made: number[] = [];
    for (const name of names) made.push((await createOne(editor.key, object.id, [fv('title', name)])).id);
    const searches = [
      'a b c d e f g h i j k l m n o p q r s t u v w x y z',
      Array.from({ length: 100 }, () => 'a').join(' '),
      'abc abc',
      'abcd abc',
      'abc abcde',
      '42',
      '42nd st',
      '"quoted',
      'back\\',
      '\\',
      '"',
      '!!!',
      '😀',
      'party 😀',
      '北京',
      '大学',
      '北京大学',
      'x'.repeat(200),
      'w2499 w0',
      'w1',
      '',
      '   ',
      '\u0000',
      'ａｂｃｄ',
    ];
    for (const search of searches) {
      for (const extra of [
        {},
        { sort: [{ field: 'name', direction: 'desc' }] },
        { count: true },
        { sort: [{ field: 'rank' }] },
      ]) {
        const a = await queryRecords(viewer.key, workspaceId, { search, ...extra });
        out.push({
          search: search.slice(0, 30),
          extra: Object.keys(extra)[0] ?? '',
          status: a.status,
          got: a.status === 200 ? ids(a).map((id) => made.indexOf(id)) : a.body,
          count: a.body?.count?.value,
        });
      }
    }
    console.log('I', JSON.stringify(out));
    expect(out.filter((o: any) => o.status !== 200)).toEqual([]);
  });
});

/** Page sizes of a walk (at most `max` pages). */
async function pageSizes(key: string, ws: number, body: Record<string, unknown>, max = 200) {
  const sizes: number[] = [];
  const seen: number[] = [];
  const reads: number[] = [];
  let cursor: string | null = null;
  do {
    const a = await queryRecords(key, ws, { ...body, ...(cursor ? { cursor } : {}) });
    if (a.status !== 200) return { error: a.status, body: a.body, sizes };
    sizes.push(a.body.items.length);
    reads.push(rowsRead(a));
    seen.push(...ids(a));
    cursor = a.body.nextCursor;
  } while (cursor !== null && sizes.length < max);
  const limit = (body.limit as number) ?? 50;
  const short = sizes
    .slice(0, -1)
    .map((n, i) => [i + 1, n])
    .filter(([, n]) => n !== limit);
  return {
    pages: sizes.length,
    total: seen.length,
    dupes: seen.length - new Set(seen).size,
    shortPages: short.slice(0, 6),
    maxRead: Math.max(...reads),
  };
}

describe('zz-break phase 2: sparse matches among many records', () => {
  it('K-N: full pages for searches, sorts and eq/in on indexed fields', async () => {
    const { viewer, workspaceId, object } = await setup([{ name: 'code', type: 'text', indexed: true }]);
    // 5,100 "Smith <i>" (code c1), then 100 "Smithson <i>" (code c2).
    await bulkRecords(
      object.id,
      workspaceId,
      5200,
      `json_array(json_object('fieldName', 'title', 'value', 'x'), json_object('fieldName', 'rank', 'value', i),
         json_object('fieldName', 'code', 'value', CASE WHEN i <= 5100 THEN 'c1' ELSE 'c2' END))`,
      `CASE WHEN i <= 5100 THEN 'Smith ' || i ELSE 'Smithson ' || i END`,
    );
    const out: Record<string, unknown> = {};
    const bodies: Record<string, Record<string, unknown>> = {
      'search smith (relevance)': { search: 'smith', limit: 100 },
      'search smithson sort name': { search: 'smithson', sort: [{ field: 'name' }], limit: 20 },
      'search smithson sort rank': { search: 'smithson', sort: [{ field: 'rank' }], limit: 20 },
      'eq code c2 sort createdAt': {
        filter: { field: 'code', op: 'eq', value: 'c2' },
        sort: [{ field: 'createdAt' }],
        limit: 20,
      },
      'in code c2,c9 sort name desc': {
        filter: { field: 'code', op: 'in', value: ['c9', 'c2'] },
        sort: [{ field: 'name', direction: 'desc' }],
        limit: 20,
      },
      'eq code c2 sort updatedAt': {
        filter: { field: 'code', op: 'eq', value: 'c2' },
        sort: [{ field: 'updatedAt' }],
        limit: 20,
      },
      'search smith + eq code c2 (relevance)': {
        search: 'smith',
        filter: { field: 'code', op: 'eq', value: 'c2' },
        limit: 20,
      },
      'eq code c2 (id)': { filter: { field: 'code', op: 'eq', value: 'c2' }, limit: 20 },
    };
    for (const [label, body] of Object.entries(bodies)) out[label] = await pageSizes(viewer.key, workspaceId, body);
    // Deleted records dominate: delete the first 5,100 and search / sort what is left.
    await env.DB.prepare(
      `UPDATE records SET deleted = 1, version = version + 1 WHERE object_id = ? AND name LIKE 'Smith %'`,
    )
      .bind(object.id)
      .run();
    out['after deletes: search smith'] = await pageSizes(viewer.key, workspaceId, { search: 'smith', limit: 20 });
    out['after deletes: sort createdAt'] = await pageSizes(viewer.key, workspaceId, {
      sort: [{ field: 'createdAt' }],
      limit: 20,
    });
    console.log('K-N', JSON.stringify(out, null, 1));
  }, 300_000);
});

/** A seeded PRNG. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('zz-break phase 3: walks while records are written', () => {
  it('O-Q: each record at most once, every unchanged match exactly once', async () => {
    const editor = await newUser('editor');
    const viewer = await newUser('viewer');
    const ws1 = await newWorkspace({ [editor.id]: 'editor', [viewer.id]: 'viewer' });
    const ws2 = await newWorkspace({ [editor.id]: 'editor', [viewer.id]: 'viewer' });
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Thing',
        workspaceIds: [ws1, ws2],
        nameTemplate: '{title}',
        fields: [
          { name: 'title', type: 'text' },
          { name: 'rank', type: 'number', indexed: true },
          { name: 'code', type: 'text', unique: true },
          { name: 'note', type: 'text' },
        ],
      })
    ).body;
    const other = (
      await admin('POST', '/admin/objects', {
        name: 'Other',
        workspaceIds: [ws1],
        nameTemplate: '{title}',
        fields: [{ name: 'title', type: 'text' }],
      })
    ).body;
    const words = ['alpha', 'alphabet', 'alp', 'beta', 'Álpha', 'ALPHA beta', 'gamma', 'alpha alpha', 'al'];
    const rand = rng(7);
    const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)] as T;
    const title = () => `${pick(words)} ${pick(words)} ${Math.floor(rand() * 5)}`;
    const all: number[] = [];
    let codeN = 0;
    for (let i = 0; i < 60; i++) {
      const values = [fv('title', title()), fv('code', `k${codeN++}`)];
      if (rand() < 0.6) values.push(fv('rank', Math.floor(rand() * 10) / 4));
      all.push((await createOne(editor.key, object.id, values)).id);
      if (i % 10 === 0) await createOne(editor.key, other.id, [fv('title', title())]);
    }
    // A few deleted at the start.
    for (const id of all.slice(0, 5)) await call('DELETE', `/workspaces/${ws1}/records/${id}`, { key: editor.key });
    const bodies: Record<string, unknown>[] = [
      { search: 'alpha', limit: 4 },
      { search: 'al', limit: 4 },
      { search: 'alpha bet', limit: 3 },
      { sort: [{ field: 'rank' }], limit: 6 },
      { sort: [{ field: 'rank', direction: 'desc' }], limit: 6 },
      { sort: [{ field: 'name' }], limit: 6 },
      { sort: [{ field: 'name', direction: 'desc' }], limit: 6 },
      { sort: [{ field: 'updatedAt' }], limit: 6 },
      { sort: [{ field: 'updatedAt', direction: 'desc' }], limit: 6 },
      { sort: [{ field: 'createdAt', direction: 'desc' }], limit: 6 },
      { sort: [{ field: 'objectId' }, { field: 'name' }], limit: 6 },
      { sort: [{ field: 'rank', direction: 'desc' }, { field: 'name' }], limit: 6 },
      { search: 'al', sort: [{ field: 'rank' }], limit: 4 },
      { search: 'alpha', sort: [{ field: 'name', direction: 'desc' }], limit: 4 },
      { search: 'alpha', sort: [{ field: 'id', direction: 'desc' }], limit: 4 },
      { filter: { field: 'rank', op: 'in', value: [0, 0.5, 1, 1.5, 2] }, limit: 4 },
      { filter: { field: 'rank', op: 'in', value: [0, 0.5, 1, 1.5, 2] }, sort: [{ field: 'name' }], limit: 4 },
      { filter: { field: 'deleted', op: 'in', value: [true, false] }, sort: [{ field: 'name' }], limit: 6 },
      { filter: { field: 'deleted', op: 'in', value: [true, false] }, search: 'alpha', limit: 4 },
    ];
    const problems: unknown[] = [];
    for (const ws of [ws2, ws1])
      for (const body of bodies)
        for (const seed of [1, 2]) {
          const r = rng(seed * 1000 + bodies.indexOf(body));
          viewer.key = (await admin('POST', `/admin/users/${viewer.id}/keys`)).body.key;
          editor.key = (await admin('POST', `/admin/users/${editor.id}/keys`)).body.key;
          const before = (await walkQuery(viewer.key, ws, body)).ids;
          const changed = new Set<number>();
          const mutate = async () => {
            const live = (
              await env.DB.prepare(`SELECT id, deleted FROM records WHERE object_id = ?`)
                .bind(object.id)
                .all<{ id: number; deleted: number }>()
            ).results;
            for (let k = 0; k < 3; k++) {
              const target = live[Math.floor(r() * live.length)]!;
              const kind = Math.floor(r() * 9);
              const wsOf = r() < 0.5 ? ws1 : ws2;
              let answer;
              if (target.deleted) {
                answer = await call('POST', `/workspaces/${wsOf}/records/${target.id}/restore`, { key: editor.key });
              } else if (kind === 0) {
                answer = await call('PATCH', `/workspaces/${wsOf}/records/${target.id}`, {
                  key: editor.key,
                  body: { fieldValues: [fv('title', title())] },
                });
              } else if (kind === 1) {
                answer = await call('PATCH', `/workspaces/${wsOf}/records/${target.id}`, {
                  key: editor.key,
                  body: { fieldValues: [fv('rank', r() < 0.3 ? null : Math.floor(r() * 10) / 4)] },
                });
              } else if (kind === 2) {
                answer = await call('PATCH', '/records/batch', {
                  key: editor.key,
                  body: [{ id: target.id, fieldValues: [fv('note', `n${r()}`)] }],
                });
              } else if (kind === 3) {
                answer = await call('DELETE', `/workspaces/${wsOf}/records/${target.id}`, { key: editor.key });
              } else if (kind === 4) {
                const code = (
                  await env.DB.prepare(`SELECT field_values ->> '$[1].value' AS c FROM records WHERE id = ?`)
                    .bind(target.id)
                    .first<{ c: string }>()
                )?.c;
                answer = await call('POST', `/objects/${object.id}/records/upsert`, {
                  key: editor.key,
                  body: {
                    matchOn: 'code',
                    items: [
                      { fieldValues: [fv('code', code), fv('title', title()), fv('rank', Math.floor(r() * 10) / 4)] },
                    ],
                  },
                });
              } else if (kind === 5) {
                answer = await call('POST', '/records/batch', {
                  key: editor.key,
                  body: [
                    {
                      objectId: object.id,
                      fieldValues: [
                        fv('title', title()),
                        fv('code', `k${codeN++}`),
                        fv('rank', Math.floor(r() * 10) / 4),
                      ],
                    },
                  ],
                });
                if (answer.status === 201) changed.add(answer.body[0].record.id);
              } else if (kind === 6) {
                answer = await call('PATCH', `/workspaces/${wsOf}/records/${target.id}`, {
                  key: editor.key,
                  body: { fieldValues: [fv('note', 'same'), fv('title', title())] },
                });
              } else {
                // A no-op patch: changes nothing.
                answer = await call('PATCH', `/workspaces/${wsOf}/records/${target.id}`, { key: editor.key, body: {} });
                continue;
              }
              if (answer.status >= 500) problems.push({ status: answer.status, body: answer.body });
              if (answer.status < 300) changed.add(target.id);
            }
          };
          const walk = await walkQuery(viewer.key, ws, body, async () => mutate());
          const dupes = walk.ids.filter((id, i) => walk.ids.indexOf(id) !== i);
          const missed = before.filter((id) => !changed.has(id) && !walk.ids.includes(id));
          if (dupes.length > 0 || missed.length > 0)
            problems.push({ ws: ws === ws1 ? 'ws1' : 'ws2', body, seed, dupes, missed });
        }
    console.log('O-Q', JSON.stringify(problems, null, 1));
    expect(problems).toEqual([]);
  }, 600_000);
});
