import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import {
  admin,
  bulkRecords,
  call,
  createOne,
  expectProblem,
  newWorkspace,
  queryRecords as query,
  rowsRead,
  walkQuery as walk,
  type Answer,
  fv,
  objectIn,
} from './helpers.ts';
import { roleWorld } from './role-world.ts';

const FIELDS = [
  { name: 'title', type: 'text' },
  { name: 'code', type: 'text', indexed: true },
  { name: 'amount', type: 'number' },
  { name: 'rank', type: 'integer', indexed: true },
  { name: 'done', type: 'boolean' },
  { name: 'due', type: 'date', indexed: true },
  { name: 'at', type: 'datetime' },
  { name: 'seen', type: 'datetime', indexed: true },
  { name: 'stage', type: 'select', options: ['lead', 'customer'] },
  { name: 'tags', type: 'multiSelect', options: ['a', 'b', 'c'] },
  { name: 'mail', type: 'email' },
  { name: 'site', type: 'url' },
  { name: 'extra', type: 'json' },
];

const setup = (fields: unknown[] = FIELDS) => objectIn({ name: 'Thing', fields });

describe('POST /workspaces/{id}/records/query: typed filters', () => {
  it('every operator on every field type finds exactly the records it should', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const a = await createOne(editor.key, object.id, [
      fv('title', 'Alpha Report'),
      fv('code', 'A-1'),
      fv('amount', 1.5),
      fv('rank', 1),
      fv('done', true),
      fv('due', '2026-01-10'),
      fv('at', '2026-01-10T10:00:00+02:00'),
      fv('seen', '2026-01-10T08:00:00Z'),
      fv('stage', 'lead'),
      fv('tags', ['a', 'b']),
      fv('mail', 'ada@example.com'),
      fv('site', 'https://example.com/a'),
      fv('extra', { x: 1 }),
    ]);
    const b = await createOne(editor.key, object.id, [
      fv('title', 'beta notes'),
      fv('code', 'B-2'),
      fv('amount', -3),
      fv('rank', 2),
      fv('done', false),
      fv('due', '2026-02-01'),
      fv('at', '2026-01-10T09:00:00Z'),
      fv('seen', '2026-01-10T09:30:00+01:00'),
      fv('stage', 'customer'),
      fv('tags', ['c']),
      fv('mail', 'bob@test.org'),
      fv('site', 'http://test.org/'),
    ]);
    const c = await createOne(editor.key, object.id, [fv('title', 'Gamma'), fv('rank', 3)]);
    const cases: [unknown, number[]][] = [
      [{ field: 'title', op: 'eq', value: 'Gamma' }, [c.id]],
      [{ field: 'title', op: 'ne', value: 'Gamma' }, [a.id, b.id]],
      [{ field: 'title', op: 'lt', value: 'B' }, [a.id]],
      [{ field: 'title', op: 'gte', value: 'b' }, [b.id]],
      [{ field: 'title', op: 'contains', value: 'REPORT' }, [a.id]],
      [{ field: 'title', op: 'startsWith', value: 'Gam' }, [c.id]],
      [{ field: 'title', op: 'in', value: ['Gamma', 'beta notes'] }, [b.id, c.id]],
      [{ field: 'title', op: 'nin', value: ['Gamma'] }, [a.id, b.id]],
      [{ field: 'code', op: 'eq', value: 'B-2' }, [b.id]],
      [{ field: 'code', op: 'exists', value: false }, [c.id]],
      [{ field: 'code', op: 'nin', value: ['A-1'] }, [b.id, c.id]],
      [{ field: 'amount', op: 'lt', value: 0 }, [b.id]],
      [{ field: 'amount', op: 'gte', value: 1.5 }, [a.id]],
      [{ field: 'amount', op: 'eq', value: 1.5 }, [a.id]],
      [{ field: 'rank', op: 'gt', value: 1 }, [b.id, c.id]],
      [{ field: 'rank', op: 'lte', value: 2 }, [a.id, b.id]],
      [{ field: 'rank', op: 'in', value: [1, 3] }, [a.id, c.id]],
      [{ field: 'rank', op: 'eq', value: 2 }, [b.id]],
      [{ field: 'done', op: 'eq', value: false }, [b.id]],
      [{ field: 'done', op: 'ne', value: true }, [b.id, c.id]],
      [{ field: 'due', op: 'gt', value: '2026-01-10' }, [b.id]],
      [{ field: 'due', op: 'lte', value: '2026-01-10' }, [a.id]],
      // 08:00Z and 09:00Z: compared as instants, not as text.
      [{ field: 'at', op: 'lt', value: '2026-01-10T08:30:00Z' }, [a.id]],
      [{ field: 'at', op: 'eq', value: '2026-01-10T11:00:00+02:00' }, [b.id]],
      [{ field: 'seen', op: 'eq', value: '2026-01-10T10:00:00+02:00' }, [a.id]],
      [{ field: 'seen', op: 'gt', value: '2026-01-10T08:00:00Z' }, [b.id]],
      [{ field: 'stage', op: 'eq', value: 'lead' }, [a.id]],
      [{ field: 'stage', op: 'in', value: ['lead', 'customer'] }, [a.id, b.id]],
      [{ field: 'tags', op: 'contains', value: 'c' }, [b.id]],
      [{ field: 'tags', op: 'exists', value: true }, [a.id, b.id]],
      [{ field: 'mail', op: 'startsWith', value: 'bob@' }, [b.id]],
      [{ field: 'mail', op: 'eq', value: 'ada@example.com' }, [a.id]],
      [{ field: 'site', op: 'startsWith', value: 'https://' }, [a.id]],
      [{ field: 'extra', op: 'exists', value: true }, [a.id]],
      [{ field: 'id', op: 'in', value: [a.id, c.id] }, [a.id, c.id]],
      [{ field: 'name', op: 'contains', value: 'thing' }, [a.id, b.id, c.id]],
      [{ field: 'createdBy', op: 'eq', value: editor.id }, [a.id, b.id, c.id]],
      [{ field: 'isTemplate', op: 'eq', value: true }, []],
      [
        {
          and: [
            { field: 'rank', op: 'gte', value: 2 },
            { field: 'code', op: 'exists', value: true },
          ],
        },
        [b.id],
      ],
      [
        {
          or: [
            { field: 'rank', op: 'eq', value: 1 },
            { field: 'title', op: 'eq', value: 'Gamma' },
          ],
        },
        [a.id, c.id],
      ],
      [{ not: { field: 'rank', op: 'eq', value: 1 } }, [b.id, c.id]],
      [
        {
          not: {
            or: [
              { field: 'code', op: 'eq', value: 'A-1' },
              { field: 'code', op: 'eq', value: 'B-2' },
            ],
          },
        },
        [c.id],
      ],
    ];
    for (const [filter, expected] of cases) {
      const answer = await query(viewer.key, workspaceId, { filter });
      expect(answer.status, JSON.stringify(filter)).toBe(200);
      expect(
        answer.body.items.map((r: any) => r.id),
        JSON.stringify(filter),
      ).toEqual(expected);
    }
  });

  it("a condition finds a field's value whatever the record's other values hold or how they were written", async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    // A json value holding text shaped like another field's entry, before the field itself.
    const decoy = await createOne(editor.key, object.id, [
      fv('extra', [
        { fieldName: 'title', value: 'decoy' },
        { fieldName: 'rank', value: 7 },
      ]),
      fv('title', 'real'),
    ]);
    const noTitle = await createOne(editor.key, object.id, [fv('extra', { fieldName: 'title', value: 'decoy' })]);
    const quoted = await createOne(editor.key, object.id, [fv('title', '{"fieldName":"rank","value":7}')]);
    const ranked = await createOne(editor.key, object.id, [fv('rank', 7), fv('tags', ['c'])]);
    // Values written in another form than the Worker's (spaces, another key order), as SQL may.
    const other = await createOne(editor.key, object.id, [fv('title', 'x')]);
    await env.DB.prepare(`UPDATE records SET field_values = ?, version = version + 1 WHERE id = ?`)
      .bind('[ { "value": "spaced", "fieldName": "title" }, { "fieldName": "tags", "value": [ "c" ] } ]', other.id)
      .run();
    const ids = async (filter: unknown): Promise<number[]> =>
      (await query(viewer.key, workspaceId, { filter })).body.items.map((r: { id: number }) => r.id);
    expect(await ids({ field: 'title', op: 'eq', value: 'real' })).toEqual([decoy.id]);
    expect(await ids({ field: 'title', op: 'eq', value: 'decoy' })).toEqual([]);
    expect(await ids({ field: 'title', op: 'exists', value: false })).toEqual([noTitle.id, ranked.id]);
    expect(await ids({ field: 'rank', op: 'eq', value: 7 })).toEqual([ranked.id]);
    expect(await ids({ field: 'title', op: 'contains', value: 'fieldname' })).toEqual([quoted.id]);
    expect(await ids({ field: 'title', op: 'eq', value: 'spaced' })).toEqual([other.id]);
    expect(await ids({ field: 'tags', op: 'contains', value: 'c' })).toEqual([ranked.id, other.id]);
  });

  it('lists every wrong operator, value and field with its pointer: 400', async () => {
    const { viewer, workspaceId } = await setup();
    const answer = await query(viewer.key, workspaceId, {
      filter: {
        and: [
          { field: 'amount', op: 'contains', value: '1' },
          { field: 'rank', op: 'eq', value: '2' },
          { field: 'nope', op: 'eq', value: 1 },
          { field: 'tags', op: 'lt', value: 'a' },
          { field: 'done', op: 'gt', value: true },
          { field: 'due', op: 'eq', value: '2026-02-30' },
          { field: 'seen', op: 'in', value: [] },
          { field: 'extra', op: 'eq', value: 1 },
          { field: 'title', op: 'exists', value: 'yes' },
          { field: 'title', op: 'like', value: 'x' },
          { field: 'title', op: 'eq' },
          { field: 'mail', op: 'eq', value: 'not an address' },
          { not: { field: 'deleted', op: 'contains', value: 'x' } },
        ],
      },
      sort: [{ field: 'title' }],
      fields: ['nope'],
      limit: 0,
      extra: 1,
    });
    expectProblem(answer, 400, 'invalid_request');
    expect(answer.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/extra', 'unknown_property'],
      ['/filter/and/0/op', 'invalid_operator'],
      ['/filter/and/1/value', 'invalid_type'],
      ['/filter/and/2/field', 'unknown_field'],
      ['/filter/and/3/op', 'invalid_operator'],
      ['/filter/and/4/op', 'invalid_operator'],
      ['/filter/and/5/value', 'invalid_type'],
      ['/filter/and/6/value', 'invalid_type'],
      ['/filter/and/7/op', 'invalid_operator'],
      ['/filter/and/8/value', 'invalid_type'],
      ['/filter/and/9/op', 'invalid_value'],
      ['/filter/and/10/value', 'required'],
      ['/filter/and/11/value', 'invalid_type'],
      ['/filter/and/12/not/op', 'invalid_operator'],
      ['/sort/0/field', 'not_sortable'],
      ['/fields/0', 'unknown_field'],
      ['/limit', 'out_of_range'],
    ]);
  });

  it('bounds the tree: 10 levels, 50 conditions; a field two objects type differently is 400', async () => {
    const { viewer, workspaceId } = await setup();
    let deep: unknown = { field: 'rank', op: 'eq', value: 1 };
    for (let i = 0; i < 10; i++) deep = { not: deep };
    const tooDeep = await query(viewer.key, workspaceId, { filter: deep });
    expectProblem(tooDeep, 400, 'invalid_request');
    expect(tooDeep.body.errors[0].code).toBe('too_deep');
    const many = Array.from({ length: 51 }, () => ({ field: 'rank', op: 'eq', value: 1 }));
    const tooMany = await query(viewer.key, workspaceId, { filter: { or: many } });
    expect(tooMany.body.errors).toEqual([
      { pointer: '/filter/or/50', code: 'too_many', message: 'expected at most 50 conditions' },
    ]);
    await admin('POST', '/admin/objects', {
      name: 'Other',
      workspaceIds: [workspaceId],
      fields: [{ name: 'rank', type: 'text' }],
    });
    const ambiguous = await query(viewer.key, workspaceId, { filter: { field: 'rank', op: 'eq', value: 1 } });
    expect(ambiguous.body.errors).toEqual([
      {
        pointer: '/filter/field',
        code: 'ambiguous_field',
        message: 'objects in view define this field with different types',
      },
    ]);
  });

  it('answers members only (viewers too); deleted records only when the filter names deleted', async () => {
    const { editor, viewer, stranger, workspaceId, object } = await setup();
    const a = await createOne(editor.key, object.id, [fv('rank', 1)]);
    const b = await createOne(editor.key, object.id, [fv('rank', 2)]);
    expect((await call('DELETE', `/workspaces/${workspaceId}/records/${b.id}`, { key: editor.key })).status).toBe(200);
    expectProblem(await query(stranger.key, workspaceId, {}), 404, 'not_found');
    expectProblem(await query(stranger.key, workspaceId, { filter: 'bad' }), 404, 'not_found');
    expectProblem(await query('nope', workspaceId, {}), 401, 'unauthorized');
    expect((await query(viewer.key, workspaceId, {})).body.items.map((r: any) => r.id)).toEqual([a.id]);
    const withDeleted = await query(viewer.key, workspaceId, { filter: { field: 'deleted', op: 'eq', value: true } });
    expect(withDeleted.body.items.map((r: any) => r.id)).toEqual([b.id]);
  });
});

describe('sort, cursors, projection, count', () => {
  it("sorts by indexed and system fields, ties by id in the first key's direction, across pages", async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const ranks = [3, 1, 2, 1, 3, 2, 1];
    const made: any[] = [];
    for (const rank of ranks) made.push(await createOne(editor.key, object.id, [fv('rank', rank)]));
    const none = await createOne(editor.key, object.id, [fv('title', 'no rank')]);
    const asc = await walk(viewer.key, workspaceId, { sort: [{ field: 'rank' }], limit: 2 });
    const byRank = (dir: 1 | -1, ties: 1 | -1 = dir) =>
      made
        .map((r, i) => ({ id: r.id, rank: ranks[i] as number }))
        .sort((x, y) => dir * (x.rank - y.rank) || ties * (x.id - y.id))
        .map((r) => r.id);
    expect(asc.ids).toEqual([...byRank(1), none.id]);
    // The ranked records' walk, then the record without a rank, in the same pages.
    expect(asc.pages).toBe(4);
    const desc = await walk(viewer.key, workspaceId, { sort: [{ field: 'rank', direction: 'desc' }], limit: 3 });
    expect(desc.ids).toEqual([...byRank(-1), none.id]);
    const byIdDesc = await walk(viewer.key, workspaceId, { sort: [{ field: 'id', direction: 'desc' }], limit: 3 });
    expect(byIdDesc.ids).toEqual([...made.map((r) => r.id), none.id].sort((x, y) => y - x));
    const two = await walk(viewer.key, workspaceId, {
      sort: [{ field: 'createdBy' }, { field: 'rank', direction: 'desc' }],
      limit: 4,
    });
    expect(two.ids).toEqual([...byRank(-1, 1), none.id]);
  });

  it('binds a cursor to the filter and sort: another body with it is 400; projects fields; counts', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    for (let i = 0; i < 5; i++) await createOne(editor.key, object.id, [fv('rank', i), fv('title', `t${i}`)]);
    const first = await query(viewer.key, workspaceId, {
      filter: { field: 'rank', op: 'gte', value: 1 },
      limit: 2,
      fields: ['title'],
      count: true,
    });
    expect(first.body.count).toEqual({ value: 4, exact: true });
    expect(first.body.items[0].fieldValues).toEqual([fv('title', 't1')]);
    expect(first.body.items[0].version).toBe(1);
    const other = await query(viewer.key, workspaceId, {
      filter: { field: 'rank', op: 'gte', value: 2 },
      cursor: first.body.nextCursor,
    });
    expectProblem(other, 400, 'invalid_request');
    expect(other.body.errors[0].pointer).toBe('/cursor');
    const edited = await query(viewer.key, workspaceId, {
      filter: { field: 'rank', op: 'gte', value: 1 },
      cursor: `${first.body.nextCursor}x`,
    });
    expectProblem(edited, 400, 'invalid_request');
    const second = await query(viewer.key, workspaceId, {
      filter: { field: 'rank', op: 'gte', value: 1 },
      limit: 2,
      fields: ['title'],
      cursor: first.body.nextCursor,
    });
    expect(second.body.items.map((r: any) => r.fieldValues[0].value)).toEqual(['t3', 't4']);
  });

  it(
    'a sorted walk of 1,000 records under concurrent writes sees each record exactly once (id, ' +
      'createdAt, an indexed field)',
    async () => {
      const { editor, viewer, workspaceId, object } = await setup();
      await bulkRecords(object.id, workspaceId, 1000, `json_array(json_object('fieldName', 'rank', 'value', i % 7))`);
      const ids = (
        await env.DB.prepare('SELECT id FROM records WHERE object_id = ? ORDER BY id')
          .bind(object.id)
          .all<{ id: number }>()
      ).results.map((r) => r.id);
      let n = 0;
      const between = async () => {
        // Each page, patch some records and create new ones concurrently with the walk.
        n += 1;
        await Promise.all([
          call('PATCH', `/workspaces/${workspaceId}/records/${ids[(n * 37) % ids.length]}`, {
            key: editor.key,
            body: { fieldValues: [fv('title', `p${n}`)] },
          }),
          call('POST', '/records/batch', {
            key: editor.key,
            body: [{ objectId: object.id, fieldValues: [fv('rank', n)] }],
          }),
        ]);
      };
      // By rank too: the patches change other fields, so no record's rank changes during the walk.
      for (const sort of [[{ field: 'id' }], [{ field: 'createdAt' }], [{ field: 'rank', direction: 'desc' }]]) {
        const seen = await walk(viewer.key, workspaceId, { sort, limit: 100 }, between);
        expect(new Set(seen.ids).size).toBe(seen.ids.length);
        for (const id of ids) expect(seen.ids.includes(id)).toBe(true);
      }
    },
  );

  it('counts every match exactly while it reads at most 20,000 candidates, then says a lower bound', async () => {
    const { viewer, workspaceId, object } = await setup([{ name: 'rank', type: 'integer' }]);
    await bulkRecords(object.id, workspaceId, 10_001, `json_array(json_object('fieldName', 'rank', 'value', i))`);
    const all = await query(viewer.key, workspaceId, { count: true, limit: 1 });
    expect(all.body.count).toEqual({ value: 10_001, exact: true });
    const some = await query(viewer.key, workspaceId, {
      count: true,
      filter: { field: 'rank', op: 'gt', value: 9_990 },
    });
    expect(some.body.count).toEqual({ value: 11, exact: true });
    // Past 20,000 candidates a count of few matches is a lower bound too: its rows read stay bounded.
    // The count reads one candidate past them (to know there are more), which holds the one match here.
    await bulkRecords(object.id, workspaceId, 10_000, `json_array(json_object('fieldName', 'rank', 'value', -i))`);
    const rare = await query(viewer.key, workspaceId, {
      count: true,
      filter: { field: 'rank', op: 'eq', value: -10_000 },
    });
    expect(rare.body.count).toEqual({ value: 1, exact: false });
    expect(rowsRead(rare)).toBeLessThan(80_000);
    // Every record matches: past the bound the workspace's kept totals count them, exactly, in one more row.
    const whole = await query(viewer.key, workspaceId, { count: true, limit: 1 });
    expect(whole.body.count).toEqual({ value: 20_001, exact: true });
    expect(rowsRead(whole)).toBeLessThan(80_000);
    // So are one object's records, and a deleted one is not among them.
    const [gone] = (await query(viewer.key, workspaceId, { limit: 1 })).body.items;
    await env.DB.prepare('UPDATE records SET deleted = 1, version = version + 1 WHERE id = ?').bind(gone.id).run();
    const ofObject = { field: 'objectId', op: 'eq', value: object.id };
    for (const filter of [ofObject, { and: [ofObject, ofObject] }]) {
      const answer = await query(viewer.key, workspaceId, { count: true, limit: 1, filter });
      expect(answer.body.count).toEqual({ value: 20_000, exact: true });
    }
    // Any other condition is counted from the records: past the bound, a lower bound.
    const ranked = await query(viewer.key, workspaceId, {
      count: true,
      limit: 1,
      filter: { and: [ofObject, { field: 'rank', op: 'gt', value: -5 }] },
    });
    expect(ranked.body.count.exact).toBe(false);
    const early = await query(viewer.key, workspaceId, { count: true, filter: { field: 'rank', op: 'eq', value: 7 } });
    expect(early.body.count).toEqual({ value: 1, exact: false });
  });

  it('counts records of a role that reads its own alone from the records, never from the totals', async () => {
    const w = await roleWorld();
    await bulkRecords(w.deal.id, w.workspaceId, 20_001, `json_array(json_object('fieldName', 'title', 'value', 'b'))`);
    const ofDeals = { field: 'objectId', op: 'eq', value: w.deal.id };
    const mine = await query(w.member.key, w.workspaceId, { count: true, limit: 1, filter: ofDeals });
    expect(mine.body.count).toEqual({ value: 1, exact: false });
    const all = await query(w.owner.key, w.workspaceId, { count: true, limit: 1, filter: ofDeals });
    expect(all.body.count).toEqual({ value: 20_003, exact: true });
  });
});

describe('bounded pages and the index', () => {
  it('an or of 50 conditions with a count over 6,000 records reads less than two of one condition', async () => {
    const fields = [
      { name: 'note', type: 'text' },
      { name: 'size', type: 'number' },
      { name: 'rank', type: 'integer', indexed: true },
    ];
    const { viewer, workspaceId, object } = await setup(fields);
    await bulkRecords(
      object.id,
      workspaceId,
      6_000,
      `json_array(json_object('fieldName', 'note', 'value', 'Note ' || i), json_object('fieldName', 'size', 'value', i),
        json_object('fieldName', 'rank', 'value', i))`,
    );
    const conditions = Array.from({ length: 50 }, (_, i) =>
      i % 3 === 0
        ? { field: 'note', op: 'contains', value: `ÉLAN-${i}` }
        : i % 3 === 1
          ? { field: 'size', op: 'lt', value: -i }
          : { field: 'rank', op: 'gt', value: 10_000 + i },
    );
    const answer = await query(viewer.key, workspaceId, { filter: { or: conditions }, count: true });
    expect(answer.body.items).toEqual([]);
    expect(answer.body.count).toEqual({ value: 0, exact: true });
    // The page reads 5,000 candidates and says where it stopped; the count reads the 6,000. Each
    // record's values are read once, however many conditions read them: 50 cost what one costs.
    expect(answer.body.nextCursor).not.toBeNull();
    const one = await query(viewer.key, workspaceId, { filter: conditions[1], count: true });
    expect(one.body.count).toEqual({ value: 0, exact: true });
    expect(rowsRead(answer)).toBeLessThan(2 * rowsRead(one));
    expect(rowsRead(answer)).toBeLessThan(15 * 6_000);
  });

  it(
    'a filter matching nothing over 20,000 records answers empty pages with cursors until done, never ' + 'an error',
    async () => {
      const { viewer, workspaceId, object } = await setup([
        { name: 'rank', type: 'integer' },
        { name: 'code', type: 'text', indexed: true },
      ]);
      await bulkRecords(object.id, workspaceId, 20_000, `json_array(json_object('fieldName', 'rank', 'value', i))`);
      // By id, and by an indexed field (none holds it: the walk of records without a value).
      for (const sort of [[{ field: 'id' }], [{ field: 'code' }], [{ field: 'code', direction: 'desc' }]]) {
        const pages: number[] = [];
        let cursor: string | null = null;
        do {
          const answer: Answer = await query(viewer.key, workspaceId, {
            filter: { field: 'rank', op: 'lt', value: 0 },
            sort,
            ...(cursor ? { cursor } : {}),
          });
          expect(answer.status).toBe(200);
          expect(answer.body.items).toEqual([]);
          pages.push(rowsRead(answer));
          cursor = answer.body.nextCursor;
        } while (cursor !== null);
        // 4 full scans, and a last page that finds the scan at its end (sorted by an indexed field, the
        // walk of the values, empty, goes on to the records without one in its first page).
        expect(pages.length).toBe(5);
        console.log(JSON.stringify({ sort, boundedPagesRowsRead: pages }));
        // What a bounded page reads is bounded too.
        for (const read of pages) expect(read).toBeLessThan(6 * 5000 + 1000);
      }
    },
  );

  it('rows read by an indexed query grow with the page, not the workspace (D1 rows_read)', async () => {
    const fields = [
      { name: 'code', type: 'text', indexed: true },
      { name: 'plain', type: 'text' },
    ];
    const { viewer, workspaceId: small, object } = await setup(fields);
    const large = await newWorkspace({ [viewer.id]: 'viewer' });
    await admin('PUT', `/admin/objects/${object.id}`, { name: 'Thing', workspaceIds: [small, large], fields });
    const values = (code: string, plain: string) =>
      `json_array(json_object('fieldName', 'code', 'value', ${code}), json_object('fieldName', 'plain', ` +
      `'value', ${plain}))`;
    // The matches come last in id order: a walk of the records reaches them after all the others.
    await bulkRecords(object.id, small, 500, values(`iif(i % 2, 'common', 'c' || i)`, `'p' || i`));
    await bulkRecords(object.id, small, 20, values(`'rare'`, `'rare'`));
    await bulkRecords(object.id, large, 4500, values(`iif(i % 2, 'common', 'c' || i)`, `'p' || i`));
    await bulkRecords(object.id, large, 20, values(`'rare'`, `'rare'`));
    const measure = async (workspaceId: number) => {
      const indexed = await query(viewer.key, workspaceId, {
        filter: { field: 'code', op: 'eq', value: 'rare' },
        limit: 10,
      });
      const unindexed = await query(viewer.key, workspaceId, {
        filter: { field: 'plain', op: 'eq', value: 'rare' },
        limit: 10,
      });
      expect(indexed.body.items.length).toBe(10);
      expect(unindexed.body.items.map((r: any) => r.id)).toEqual(indexed.body.items.map((r: any) => r.id));
      const common = await query(viewer.key, workspaceId, {
        filter: { field: 'code', op: 'eq', value: 'common' },
        limit: 10,
      });
      expect(common.body.items.length).toBe(10);
      const sorted = await query(viewer.key, workspaceId, { sort: [{ field: 'code' }], limit: 10 });
      expect(sorted.body.items.length).toBe(10);
      return {
        indexed: rowsRead(indexed),
        unindexed: rowsRead(unindexed),
        common: rowsRead(common),
        sorted: rowsRead(sorted),
      };
    };
    const inSmall = await measure(small);
    const inLarge = await measure(large);
    console.log(JSON.stringify({ rowsRead: { small: inSmall, large: inLarge } }));
    expect(inLarge.indexed).toBeLessThan(200);
    // The index is by field and value, not by workspace: the other workspace's 20 matches, which
    // come first in id order, are read (and passed over) too.
    expect(inLarge.indexed).toBeLessThanOrEqual(inSmall.indexed + 40);
    expect(inLarge.unindexed).toBeGreaterThan(4500);
    // Sorted by an indexed field: read from the index, by the page.
    expect(inLarge.sorted).toBeLessThan(400);
    // A value most records hold: still the page's rows, not the matches'.
    expect(inLarge.common).toBeLessThan(400);
  });
});

describe('search by name', () => {
  it('matches every word as a word prefix, ignoring case and accents, in multi-byte text too', async () => {
    const { editor, viewer, workspaceId } = await setup();
    const people = (
      await admin('POST', '/admin/objects', {
        name: 'Person',
        workspaceIds: [workspaceId],
        nameTemplate: '{full}',
        fields: [{ name: 'full', type: 'text' }],
      })
    ).body;
    const names = ['Zoë Ångström', 'zoe angstrom-Smith', 'Ángel Müller', '東京 タワー', 'Émile Zola', 'Chloé'];
    const made: any[] = [];
    for (const full of names) made.push(await createOne(editor.key, people.id, [fv('full', full)]));
    const ids = (search: string) =>
      query(viewer.key, workspaceId, { search, filter: { field: 'objectId', op: 'eq', value: people.id } }).then(
        (answer) => {
          expect(answer.status).toBe(200);
          return answer.body.items.map((r: any) => names[made.findIndex((m) => m.id === r.id)]);
        },
      );
    expect(await ids('zoe')).toEqual(['Zoë Ångström', 'zoe angstrom-Smith']);
    expect(await ids('ZOË ANG')).toEqual(['Zoë Ångström', 'zoe angstrom-Smith']);
    expect(await ids('smi zo')).toEqual(['zoe angstrom-Smith']);
    expect(await ids('mull')).toEqual(['Ángel Müller']);
    expect(await ids('ull')).toEqual([]);
    expect(await ids('東京')).toEqual(['東京 タワー']);
    expect(await ids('タワ')).toEqual(['東京 タワー']);
    expect(await ids('emile')).toEqual(['Émile Zola']);
    expect(await ids('chloe')).toEqual(['Chloé']);
    // Pages of a search follow their cursor.
    const first = await query(viewer.key, workspaceId, { search: 'z', limit: 2 });
    expect(first.body.items).toHaveLength(2);
    const second = await query(viewer.key, workspaceId, { search: 'z', limit: 2, cursor: first.body.nextCursor });
    expect(second.body.items.map((r: any) => r.id)).toEqual([made[4].id]);
    expect(second.body.nextCursor).toBeNull();
    const tooLong = await query(viewer.key, workspaceId, { search: 'x'.repeat(201) });
    expectProblem(tooLong, 400, 'invalid_request');
  });
});

describe('sorted walks at the edges', () => {
  it('a sort by an indexed field fills pages across the records without a value, reading by the page', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const made: number[] = [];
    for (let i = 0; i < 3; i++) made.push((await createOne(editor.key, object.id, [fv('rank', i)])).id);
    const none: number[] = [];
    for (let i = 0; i < 3; i++) none.push((await createOne(editor.key, object.id, [fv('title', `m${i}`)])).id);
    for (const direction of ['asc', 'desc'] as const) {
      const first = await query(viewer.key, workspaceId, { sort: [{ field: 'rank', direction }], limit: 5 });
      expect(first.body.items).toHaveLength(5);
      const walked = await walk(viewer.key, workspaceId, { sort: [{ field: 'rank', direction }], limit: 5 });
      const values = direction === 'asc' ? made : [...made].reverse();
      const missing = direction === 'asc' ? none : [...none].reverse();
      expect(walked.ids).toEqual([...values, ...missing]);
    }
    // Many records without a value: each page of them reads rows by the page.
    await bulkRecords(
      object.id,
      workspaceId,
      3_000,
      `json_array(json_object('fieldName', 'title', 'value', 'x' || i))`,
    );
    let cursor: string | null = null;
    for (let page = 0; page < 4; page++) {
      const answer: Answer = await query(viewer.key, workspaceId, {
        sort: [{ field: 'rank' }],
        limit: 20,
        ...(cursor === null ? {} : { cursor }),
      });
      expect(answer.body.items).toHaveLength(20);
      expect(rowsRead(answer)).toBeLessThan(400);
      cursor = answer.body.nextCursor;
    }
  });

  it('a sort by names of thousands of characters walks by cursors to the end', async () => {
    const { editor, viewer, workspaceId } = await setup();
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Long',
        workspaceIds: [workspaceId],
        nameTemplate: '{long}',
        fields: [{ name: 'long', type: 'text', indexed: true }],
      })
    ).body;
    const made: number[] = [];
    for (let i = 0; i < 4; i++)
      made.push((await createOne(editor.key, object.id, [fv('long', `${'é'.repeat(5_000)}${i}`)])).id);
    for (const sort of [[{ field: 'name' }], [{ field: 'long', direction: 'desc' }]]) {
      const walked = await walk(viewer.key, workspaceId, {
        sort,
        filter: { field: 'objectId', op: 'eq', value: object.id },
        limit: 1,
      });
      expect([sort, walked.ids]).toEqual([sort, sort[0]?.field === 'name' ? made : [...made].reverse()]);
    }
  });
});
