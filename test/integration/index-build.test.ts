import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { BUILD_CHUNK, BUILD_CHUNK_BYTES, buildStep } from '../../src/storage/record-index.ts';
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

const PLAIN = [
  { name: 'code', type: 'text' },
  { name: 'rank', type: 'integer' },
  { name: 'note', type: 'text' },
];
const INDEXED = PLAIN.map((f) => (f.name === 'note' ? f : { ...f, indexed: true }));
const RECORDS = 2_600;
// One record in ten has no code; codes repeat (ties broken by id); ranks 0–96.
const VALUES =
  `iif(i % 10 = 0, json_array(json_object('fieldName', 'rank', 'value', i % 97)), ` +
  `json_array(json_object('fieldName', 'code', 'value', 'c' || (i % 50)), ` +
  `json_object('fieldName', 'rank', 'value', i % 97)))`;

async function setup() {
  const editor = await newUser('editor');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const definition = { name: 'Thing', workspaceIds: [workspaceId], fields: PLAIN };
  const object = (await admin('POST', '/admin/objects', definition)).body as { id: number };
  const builder = indexBuilder(object.id);
  await builder.hold();
  await bulkRecords(object.id, workspaceId, RECORDS, VALUES);
  return { editor, workspaceId, object, definition, builder };
}

/** Every id a query walks, page by page; `between` runs after each page. */
const walk = async (key: string, workspaceId: number, body: object, between?: (page: number) => Promise<void>) =>
  (await walkQuery(key, workspaceId, body as Record<string, unknown>, between)).ids;

interface Row {
  id: number;
  code?: string;
  rank?: number;
}

/** Every record of the object as its stored values say (not as the index does). */
async function stored(objectId: number): Promise<Row[]> {
  const rows = await env.DB.prepare('SELECT id, field_values FROM records WHERE object_id = ? ORDER BY id')
    .bind(objectId)
    .all<{ id: number; field_values: string }>();
  return rows.results.map(({ id, field_values }) => {
    const row: Row = { id };
    for (const { fieldName, value } of JSON.parse(field_values) as { fieldName: string; value: never }[])
      if (fieldName === 'code' || fieldName === 'rank') row[fieldName] = value;
    return row;
  });
}

/** By code (ascending or descending, records without one last either way), then id the same way. */
const byCode = (desc: boolean) => (a: Row, b: Row) => {
  if (a.code === b.code) return (a.id - b.id) * (desc ? -1 : 1);
  if (a.code === undefined) return 1;
  if (b.code === undefined) return -1;
  return (a.code < b.code ? -1 : 1) * (desc ? -1 : 1);
};

/** Queries on the fields being built answer exactly what the stored values say, whatever the index holds. */
async function expectQueriesRight(key: string, workspaceId: number, objectId: number): Promise<void> {
  const rows = await stored(objectId);
  const ids = (list: Row[]) => list.map((r) => r.id);
  expect(await walk(key, workspaceId, { filter: { field: 'code', op: 'eq', value: 'c7' }, limit: 100 })).toEqual(
    ids(rows.filter((r) => r.code === 'c7')),
  );
  const low = rows.filter((r) => r.rank !== undefined && r.rank < 12);
  for (const desc of [false, true]) {
    const direction = desc ? 'desc' : 'asc';
    const sorted = await walk(key, workspaceId, {
      filter: { field: 'rank', op: 'lt', value: 12 },
      sort: [{ field: 'code', direction }],
      limit: 100,
    });
    expect(sorted).toEqual(ids([...low].sort(byCode(desc))));
  }
  const byRank = await walk(key, workspaceId, {
    filter: { field: 'rank', op: 'gte', value: 94 },
    sort: [{ field: 'rank', direction: 'desc' }],
    limit: 100,
  });
  const high = rows.filter((r) => r.rank !== undefined && r.rank >= 94);
  expect(byRank).toEqual(ids(high.sort((a, b) => (b.rank ?? 0) - (a.rank ?? 0) || b.id - a.id)));
}

/** The index rows of the object's field, as `[record id, value]`. */
async function indexOf(objectId: number, field: string): Promise<[number, unknown][]> {
  const rows = await env.DB.prepare(
    'SELECT record_id, value FROM record_index WHERE object_id = ? AND field = ? ORDER BY record_id',
  )
    .bind(objectId, field)
    .all<{ record_id: number; value: unknown }>();
  return rows.results.map((r) => [r.record_id, r.value]);
}

const builds = async (objectId: number) =>
  (
    await env.DB.prepare('SELECT field, after_record_id AS after FROM index_builds WHERE object_id = ? ORDER BY field')
      .bind(objectId)
      .all<{ field: string; after: number }>()
  ).results;

describe('a field newly marked indexed is built in bounded chunks, on alarms', () => {
  it(
    'builds 1,000 records a step, resumes after a restart where it stopped, keeps writes made meanwhile, ' +
      'and queries meanwhile answer from the stored values',
    async () => {
      const { editor, workspaceId, object, definition } = await setup();
      let builder = indexBuilder(object.id);
      const ids = (await stored(object.id)).map((r) => r.id);
      const put = await admin('PUT', `/admin/objects/${object.id}`, { ...definition, fields: INDEXED });
      expect(put.status).toBe(200);
      // The definition's write only notes the builds: no record is indexed yet.
      expect(await builds(object.id)).toEqual([
        { field: 'code', after: -1 },
        { field: 'rank', after: -1 },
      ]);
      expect(await indexOf(object.id, 'code')).toEqual([]);
      await expectQueriesRight(editor.key, workspaceId, object.id);

      // One step: exactly the first chunk of records, and the build's position moved with it.
      expect(await builder.stepOnce(object.id)).toBe(true);
      const first = await indexOf(object.id, 'code');
      expect(first.length).toBe(BUILD_CHUNK - BUILD_CHUNK / 10);
      expect(Math.max(...first.map(([id]) => id))).toBeLessThanOrEqual(ids[BUILD_CHUNK - 1] as number);
      expect(await builds(object.id)).toEqual([
        { field: 'code', after: ids[BUILD_CHUNK - 1] },
        { field: 'rank', after: -1 },
      ]);
      await expectQueriesRight(editor.key, workspaceId, object.id);

      // A restart loses nothing: the position is in D1, and the next step takes the next chunk.
      await builder.restart().catch(() => {});
      builder = indexBuilder(object.id);
      expect(await builder.stepOnce(object.id)).toBe(true);
      expect(await builds(object.id)).toEqual([
        { field: 'code', after: ids[2 * BUILD_CHUNK - 1] },
        { field: 'rank', after: -1 },
      ]);

      // Writes meanwhile, before and after the build's position, and a new record.
      const patch = (id: number, code: string) =>
        call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
          key: editor.key,
          body: { fieldValues: [{ fieldName: 'code', value: code }] },
        });
      expect((await patch(ids[10] as number, 'c7')).status).toBe(200);
      expect((await patch(ids[2_500] as number, 'aa')).status).toBe(200);
      expect((await patch(ids[2_501] as number, 'c7')).status).toBe(200);
      const created = await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [{ fieldName: 'code', value: 'c7' }] }],
      });
      expect(created.status).toBe(201);
      await expectQueriesRight(editor.key, workspaceId, object.id);

      // A walk begun while building goes on, once built, to the same end.
      const rows = await stored(object.id);
      const walked = await walk(editor.key, workspaceId, { sort: [{ field: 'code' }], limit: 100 }, async (page) => {
        if (page !== 3) return;
        await builder.release(object.id);
        await untilIndexBuilt(object.id);
      });
      expect(walked).toEqual([...rows].sort(byCode(false)).map((r) => r.id));

      // Built: the index holds exactly the stored values, and the queries read it.
      expect(await builds(object.id)).toEqual([]);
      const now = await stored(object.id);
      expect(await indexOf(object.id, 'code')).toEqual(
        now.filter((r) => r.code !== undefined).map((r) => [r.id, r.code]),
      );
      expect(await indexOf(object.id, 'rank')).toEqual(
        now.filter((r) => r.rank !== undefined).map((r) => [r.id, r.rank]),
      );
      await expectQueriesRight(editor.key, workspaceId, object.id);
    },
  );

  it('unindexing a field while it is built ends its build and drops what was built', async () => {
    const { object, definition, builder } = await setup();
    await admin('PUT', `/admin/objects/${object.id}`, { ...definition, fields: INDEXED });
    await builder.stepOnce(object.id);
    expect((await indexOf(object.id, 'code')).length).toBeGreaterThan(0);
    const onlyRank = PLAIN.map((f) => (f.name === 'rank' ? { ...f, indexed: true } : f));
    expect((await admin('PUT', `/admin/objects/${object.id}`, { ...definition, fields: onlyRank })).status).toBe(200);
    expect(await builds(object.id)).toEqual([{ field: 'rank', after: -1 }]);
    expect(await indexOf(object.id, 'code')).toEqual([]);
    // A version that changes no field's indexing leaves the build where it is.
    await builder.stepOnce(object.id);
    const at = await builds(object.id);
    expect(at[0]?.after).toBeGreaterThan(0);
    const renamed = { ...definition, name: 'Renamed', fields: onlyRank };
    expect((await admin('PUT', `/admin/objects/${object.id}`, renamed)).status).toBe(200);
    expect(await builds(object.id)).toEqual(at);
  });

  it('a chunk of large records holds fewer of them: a step reads at most its bytes, and the build ends', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const definition = { name: 'Big', workspaceIds: [workspaceId], fields: PLAIN };
    const object = (await admin('POST', '/admin/objects', definition)).body as { id: number };
    const builder = indexBuilder(object.id);
    await builder.hold();
    // 200 records of about 100 KB: 20 MB in all.
    await bulkRecords(
      object.id,
      workspaceId,
      200,
      `json_array(json_object('fieldName', 'code', 'value', 'c' || i), ` +
        `json_object('fieldName', 'note', 'value', substr(hex(zeroblob(50000)), 1, 100000)))`,
    );
    await admin('PUT', `/admin/objects/${object.id}`, { ...definition, fields: INDEXED });
    expect(await builder.stepOnce(object.id)).toBe(true);
    const first = await indexOf(object.id, 'code');
    const perRecord = 100_000;
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThanOrEqual(Math.floor(BUILD_CHUNK_BYTES / perRecord) + 1);
    expect((await builds(object.id))[0]).toEqual({ field: 'code', after: first.at(-1)?.[0] });
    await builder.release(object.id);
    await untilIndexBuilt(object.id);
    expect((await indexOf(object.id, 'code')).length).toBe(200);
  });

  it('a build whose start was lost is started by the scheduled run', async () => {
    const { object, definition, builder } = await setup();
    await admin('PUT', `/admin/objects/${object.id}`, { ...definition, fields: INDEXED });
    // Held, the builder dropped the start's alarm as if the call had been lost.
    await builder.unhold();
    expect((await builds(object.id)).length).toBe(2);
    await runScheduled();
    await untilIndexBuilt(object.id);
    expect((await indexOf(object.id, 'rank')).length).toBe(RECORDS);
  });
});

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

describe('index builds restarted, raced and ended under a walk', () => {
  const index = (objectId: number) => indexOf(objectId, 'rank');
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
