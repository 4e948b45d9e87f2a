import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { searchKey } from '../../src/domain/query.ts';
import { canonicalJson } from '../../src/core/json.ts';
import { cursorKey, signPosition } from '../../src/http/cursor.ts';
import { storedCursorKey } from '../../src/storage/cursor-key.ts';
import { Meter } from '../../src/storage/meter.ts';
import { buildStep } from '../../src/storage/record-index.ts';
import {
  admin,
  bulkRecords,
  call,
  createOne,
  newUser,
  newWorkspace,
  queryRecords,
  untilIndexBuilt,
  walkQuery,
  runScheduled,
  indexBuilder,
} from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

describe('index builds: a field whose stored values its new type cannot index', () => {
  it('sorts a text field turned datetime the same while it is built and after, each record once', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const definition = {
      name: 'Event',
      workspaceIds: [workspaceId],
      fields: [
        { name: 'when', type: 'text' },
        { name: 'tag', type: 'text' },
      ],
    };
    const object = (await admin('POST', '/admin/objects', definition)).body as { id: number };
    // Written as text: one value no date-time reading can make sense of, two that are date-times.
    const late = (await createOne(editor.key, object.id, [fv('when', '2026-03-01T00:00:00Z')])).id as number;
    const odd = (await createOne(editor.key, object.id, [fv('when', 'not a date')])).id as number;
    const early = (await createOne(editor.key, object.id, [fv('when', '2026-01-01T00:00:00Z')])).id as number;
    const none = (await createOne(editor.key, object.id, [fv('tag', 'x')])).id as number;
    const builder = indexBuilder(object.id);
    await builder.hold();
    const changed = await admin('PUT', `/admin/objects/${object.id}`, {
      ...definition,
      fields: [{ name: 'when', type: 'datetime', indexed: true }, definition.fields[1]],
    });
    expect(changed.status).toBe(200);
    // A value the type cannot order counts as no value: last either way, by id in the sort's direction
    // (as the stored values say).
    const expected = { asc: [early, late, odd, none], desc: [late, early, none, odd] };
    const expectSorted = async () => {
      for (const direction of ['asc', 'desc'] as const) {
        for (const limit of [1, 2, 100]) {
          const { ids } = await walkQuery(editor.key, workspaceId, { sort: [{ field: 'when', direction }], limit });
          expect(ids).toEqual(expected[direction]);
        }
      }
      const present = { filter: { field: 'when', op: 'exists', value: true } };
      expect((await walkQuery(editor.key, workspaceId, present)).ids).toEqual([late, early]);
    };
    // While the build is due, from the stored values; then from the index.
    await expectSorted();
    await builder.release(object.id);
    await untilIndexBuilt(object.id);
    await expectSorted();
  });
});

describe('search keys filled by the Cron Trigger', () => {
  it('fills the keys of long names whose folded words are longer than the names (within D1 limits)', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Scroll',
        workspaceIds: [workspaceId],
        nameTemplate: '{title}',
        fields: [{ name: 'title', type: 'text' }],
      })
    ).body as { id: number };
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
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Firm',
        workspaceIds: [workspaceId],
        nameTemplate: '{title}',
        fields: [{ name: 'title', type: 'text' }],
      })
    ).body as { id: number };
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

describe('index builds restarted, raced and ended under a walk', () => {
  const builds = async (objectId: number) =>
    (
      await env.DB.prepare('SELECT field, after_record_id AS after FROM index_builds WHERE object_id = ?')
        .bind(objectId)
        .all<{ field: string; after: number }>()
    ).results;
  const index = async (objectId: number) =>
    (
      await env.DB.prepare('SELECT record_id, value FROM record_index WHERE object_id = ? ORDER BY record_id')
        .bind(objectId)
        .all<{ record_id: number; value: unknown }>()
    ).results.map((r) => [r.record_id, r.value]);
  const stored = async (objectId: number) =>
    (
      await env.DB.prepare(
        `SELECT r.id, (SELECT e.value ->> '$.value' FROM json_each(r.field_values) e
           WHERE e.value ->> '$.fieldName' = 'rank') AS rank FROM records r WHERE object_id = ? ORDER BY id`,
      )
        .bind(objectId)
        .all<{ id: number; rank: number | null }>()
    ).results;

  it('restarts a build on a type change; a stale step writes nothing; a desc walk spans the end', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const definition = { name: 'Item', workspaceIds: [workspaceId], fields: [{ name: 'rank', type: 'integer' }] };
    const object = (await admin('POST', '/admin/objects', definition)).body as { id: number };
    const builder = indexBuilder(object.id);
    await builder.hold();
    // One record in eight has no rank; ranks repeat.
    await bulkRecords(
      object.id,
      workspaceId,
      2_400,
      `iif(i % 8 = 0, json_array(), json_array(json_object('fieldName', 'rank', 'value', i % 37)))`,
    );
    const indexed = (type: string) => ({ ...definition, fields: [{ name: 'rank', type, indexed: true }] });
    expect((await admin('PUT', `/admin/objects/${object.id}`, indexed('integer'))).status).toBe(200);
    expect(await builder.stepOnce(object.id)).toBe(true);
    const [moved] = await builds(object.id);
    expect(moved?.after).toBeGreaterThan(0);
    // Another type: the build starts again from the first record.
    expect((await admin('PUT', `/admin/objects/${object.id}`, indexed('number'))).status).toBe(200);
    expect(await builds(object.id)).toEqual([{ field: 'rank', after: -1 }]);
    // A step that read the position before the restart writes nothing and moves nothing.
    const before = await index(object.id);
    expect(await buildStep(env.DB, object.id, { field: 'rank', after: moved?.after ?? 0 })).toBe(false);
    expect(await index(object.id)).toEqual(before);
    expect(await builds(object.id)).toEqual([{ field: 'rank', after: -1 }]);

    // A walk by rank, descending, begun while building, ends once built: each record once, in order.
    const rows = await stored(object.id);
    const expected = [...rows]
      .sort((a, b) => {
        if (a.rank === b.rank) return b.id - a.id;
        if (a.rank === null) return 1;
        if (b.rank === null) return -1;
        return b.rank - a.rank;
      })
      .map((r) => r.id);
    for (const switchAt of [3, 22]) {
      if (switchAt === 22) {
        // Again from the start of a build, the switch now among the records without a rank.
        await builder.hold();
        expect((await admin('PUT', `/admin/objects/${object.id}`, indexed('integer'))).status).toBe(200);
        expect(await builds(object.id)).toEqual([{ field: 'rank', after: -1 }]);
      }
      const walked = await walkQuery(
        editor.key,
        workspaceId,
        { sort: [{ field: 'rank', direction: 'desc' }], limit: 100 },
        async (page) => {
          if (page !== switchAt) return;
          await builder.release(object.id);
          await untilIndexBuilt(object.id);
        },
      );
      expect(walked.ids).toEqual(expected);
    }
    expect(await index(object.id)).toEqual(rows.filter((r) => r.rank !== null).map((r) => [r.id, r.rank]));
  }, 60_000);
});

describe('search keys of long names written in batches', () => {
  it('renames 20 records at once to 10,000-character names that fold to keys 18 times longer', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Scroll',
        workspaceIds: [workspaceId],
        nameTemplate: '{title}',
        fields: [
          { name: 'title', type: 'text' },
          { name: 'n', type: 'integer' },
        ],
      })
    ).body as { id: number };
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
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Place',
        workspaceIds: [workspaceId],
        nameTemplate: '{title}',
        fields: [{ name: 'title', type: 'text' }],
      })
    ).body as { id: number };
    const sophist = (await createOne(editor.key, object.id, [fv('title', 'ΣΟΦΟΣΤΗΣ Α')])).id as number;
    const street = (await createOne(editor.key, object.id, [fv('title', 'Große Straße')])).id as number;
    await createOne(editor.key, object.id, [fv('title', 'Other')]);
    const ids = async (search: string) => (await walkQuery(editor.key, workspaceId, { search })).ids;
    expect(await ids('ΣΟΦΟΣ')).toEqual([sophist]);
    expect(await ids('GROSSE STRASSE')).toEqual([street]);
    expect(await ids('große strasse')).toEqual([street]);
  });
});

describe('the largest query a body allows, while its fields are built', () => {
  it('answers 50 date-time conditions, a 100-word search, 3 sort keys read from the records', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const names = ['d1', 'd2', 'd3'];
    const definition = {
      name: 'Slot',
      workspaceIds: [workspaceId],
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }, ...names.map((name) => ({ name, type: 'datetime' }))],
    };
    const object = (await admin('POST', '/admin/objects', definition)).body as { id: number };
    const words = Array.from({ length: 100 }, (_, i) => String.fromCharCode(97 + (i % 26)));
    const all = (
      await createOne(editor.key, object.id, [
        fv('title', words.join(' ')),
        ...names.map((n) => fv(n, '2026-01-01T00:00:00Z')),
      ])
    ).id as number;
    await createOne(editor.key, object.id, [fv('title', 'a b')]);
    const builder = indexBuilder(object.id);
    await builder.hold();
    const indexed = {
      ...definition,
      fields: definition.fields.map((f) => (f.name === 'title' ? f : { ...f, indexed: true })),
    };
    expect((await admin('PUT', `/admin/objects/${object.id}`, indexed)).status).toBe(200);
    const conditions = Array.from({ length: 50 }, (_, i) => ({
      field: names[i % 3],
      op: i % 2 === 0 ? 'ne' : 'in',
      value: i % 2 === 0 ? '2025-01-01T00:00:00+02:00' : ['2026-01-01T00:00:00Z', '2026-01-01T01:00:00+01:00'],
    }));
    const search = words.join(' ');
    expect(search.length).toBeLessThanOrEqual(200);
    // A search of 100 words alone.
    expect((await walkQuery(editor.key, workspaceId, { search: words.join(' ') })).ids).toEqual([all]);
    for (const sort of [undefined, names.map((field) => ({ field, direction: 'desc' }))]) {
      const answer = await queryRecords(editor.key, workspaceId, {
        filter: { and: conditions },
        search,
        ...(sort === undefined ? {} : { sort }),
        count: true,
      });
      expect(answer.status).toBe(200);
      expect(answer.body.items.map((r: { id: number }) => r.id)).toEqual([all]);
      expect(answer.body.count).toEqual({ value: 1, exact: true });
    }
    await builder.release(object.id);
  }, 60_000);
});

describe('rows written by a patch of a record written before names had keys', () => {
  const written = (answer: { headers: Headers }) =>
    Number(/rows;desc="(\d+) written/.exec(answer.headers.get('Server-Timing') ?? '')?.[1]);

  it('stays within the budget of a patch of one small field, and the patch gives the record its key', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Note',
        workspaceIds: [workspaceId],
        nameTemplate: '{title}',
        fields: [
          { name: 'title', type: 'text' },
          { name: 'n', type: 'integer' },
        ],
      })
    ).body as { id: number };
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
