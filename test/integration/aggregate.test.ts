import { beforeAll, describe, expect, it } from 'vitest';
import { admin, bulkRecords, call, expectProblem, fv, newUser, newWorkspace, rowsRead } from './helpers.ts';
import { roleWorld } from './role-world.ts';

/**
 * Aggregates of one object's records in a workspace, against a hand count of the same records:
 * groups by a select, the options of a multiSelect, a boolean, a date by month and week, the
 * creator; every measure; a filter; pages of groups; the bound; access; every bad input.
 */

const STAGES = ['lead', 'won', 'lost'];
const TAGS = ['a', 'b', 'c'];
const N = 60;

interface Deal {
  stage: string | null;
  tags: string[];
  amount: number | null;
  qty: number;
  closed: boolean;
  closeDate: string;
  signedAt: string;
  by: number;
}

let editors: { id: number; key: string }[];
let viewer: { id: number; key: string };
let workspaceId: number;
let dealId: number;
let otherId: number;
const deals: Deal[] = [];

beforeAll(async () => {
  editors = [await newUser('editor'), await newUser('editor')];
  viewer = await newUser('viewer');
  workspaceId = await newWorkspace({ [editors[0]!.id]: 'editor', [editors[1]!.id]: 'editor', [viewer.id]: 'viewer' });
  const fields = [
    { name: 'stage', type: 'select', options: STAGES },
    { name: 'tags', type: 'multiSelect', options: TAGS },
    { name: 'amount', type: 'number' },
    { name: 'qty', type: 'integer' },
    { name: 'closed', type: 'boolean' },
    { name: 'closeDate', type: 'date' },
    { name: 'signedAt', type: 'datetime' },
    { name: 'note', type: 'text' },
    { name: 'double', type: 'formula', expression: 'qty * 2', resultType: 'number' },
  ];
  const made = await admin('POST', '/admin/objects', { name: 'Deal', workspaceIds: [workspaceId], fields });
  dealId = made.body.id;
  otherId = (await admin('POST', '/admin/objects', { name: 'Other', workspaceIds: [workspaceId], fields: [fields[3]] }))
    .body.id;
  // Values no test tuned: a small generator, each deal by one of two editors.
  for (let i = 0; i < N; i++) {
    const r = (i * 7919 + 13) % 101;
    deals.push({
      stage: i % 7 === 0 ? null : (STAGES[r % 3] as string),
      tags: TAGS.filter((_, t) => (r >> t) % 2 === 1),
      amount: i % 11 === 0 ? null : Math.round((r * 37.5 + i) * 100) / 100,
      qty: (r % 9) - 2,
      closed: r % 2 === 0,
      closeDate: `2026-${String((r % 12) + 1).padStart(2, '0')}-${String((r % 28) + 1).padStart(2, '0')}`,
      signedAt: new Date(Date.UTC(2026, r % 12, (r % 28) + 1, r % 24, 30)).toISOString(),
      by: i % 2,
    });
  }
  for (const [by, editor] of editors.entries()) {
    const body = deals
      .filter((deal) => deal.by === by)
      .map((deal) => ({
        objectId: dealId,
        fieldValues: [
          ...(deal.stage === null ? [] : [fv('stage', deal.stage)]),
          fv('tags', deal.tags),
          ...(deal.amount === null ? [] : [fv('amount', deal.amount)]),
          fv('qty', deal.qty),
          fv('closed', deal.closed),
          fv('closeDate', deal.closeDate),
          fv('signedAt', deal.signedAt),
          fv('note', `n${deal.qty}`),
        ],
      }));
    for (let at = 0; at < body.length; at += 20) {
      const created = await call('POST', '/records/batch', { key: editor.key, body: body.slice(at, at + 20) });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
  }
  // Records of another object in the same workspace are never counted.
  await bulkRecords(otherId, workspaceId, 500, `json_array(json_object('fieldName', 'qty', 'value', i))`);
}, 60_000);

const aggregate = (body: Record<string, unknown>, key = viewer.key) =>
  call('POST', `/workspaces/${workspaceId}/records/aggregate`, { key, body: { objectId: dealId, ...body } });

/** The hand count: groups by `keyOf` (several keys: each its own group), each measured, in key order, null last. */
function handCount(keysOf: (deal: Deal) => unknown[][], measure: (group: Deal[]) => unknown[]) {
  const groups = new Map<string, { key: unknown[]; deals: Deal[] }>();
  for (const deal of deals)
    for (const key of keysOf(deal)) {
      const id = JSON.stringify(key);
      if (!groups.has(id)) groups.set(id, { key, deals: [] });
      groups.get(id)!.deals.push(deal);
    }
  const compare = (a: unknown, b: unknown): number =>
    a === b ? 0 : a === null ? 1 : b === null ? -1 : (a as number | string) < (b as number | string) ? -1 : 1;
  return [...groups.values()]
    .sort((a, b) => a.key.map((k, i) => compare(k, b.key[i])).find((c) => c !== 0) ?? 0)
    .map((group) => ({ key: group.key, values: measure(group.deals) }));
}

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
const amounts = (group: Deal[]): number[] => group.flatMap((d) => (d.amount === null ? [] : [d.amount]));
const close = (a: unknown, b: unknown) =>
  typeof a === 'number' && typeof b === 'number' ? Math.abs(a - b) < 1e-6 : a === b;

function expectGroups(
  answer: { body: { groups: { key: Record<string, unknown>; values: unknown[] }[] } },
  names: string[],
  expected: ReturnType<typeof handCount>,
) {
  const got = answer.body.groups.map((g) => ({ key: names.map((name) => g.key[name]), values: g.values }));
  expect(got.map((g) => g.key)).toEqual(expected.map((g) => g.key));
  got.forEach((g, i) => {
    const want = expected[i]!.values;
    expect(
      g.values.every((v, j) => close(v, want[j])),
      JSON.stringify([g, want]),
    ).toBe(true);
  });
}

describe('POST /workspaces/{id}/records/aggregate', () => {
  it('counts and measures by a select, blanks as the null group last, equal to a hand count', async () => {
    const measures = [
      { op: 'count' },
      { op: 'sum', field: 'amount' },
      { op: 'avg', field: 'amount' },
      { op: 'min', field: 'qty' },
      { op: 'max', field: 'double' },
    ];
    const answer = await aggregate({ groupBy: [{ field: 'stage' }], measures });
    expect(answer.status).toBe(200);
    expect(answer.body.exact).toBe(true);
    expect(answer.body.nextCursor).toBeNull();
    const expected = handCount(
      (d) => [[d.stage]],
      (g) => [
        g.length,
        amounts(g).length === 0 ? null : sum(amounts(g)),
        amounts(g).length === 0 ? null : sum(amounts(g)) / amounts(g).length,
        Math.min(...g.map((d) => d.qty)),
        Math.max(...g.map((d) => d.qty * 2)),
      ],
    );
    expectGroups(answer, ['stage'], expected);
    expect(rowsRead(answer)).toBeLessThan(20 * N);
  });

  it('without groups: one group over every record; over none: a count of 0', async () => {
    const all = await aggregate({ measures: [{ op: 'count' }, { op: 'sum', field: 'qty' }] });
    expect(all.body.groups).toEqual([{ key: {}, values: [N, sum(deals.map((d) => d.qty))] }]);
    const none = await aggregate({ filter: { field: 'qty', op: 'gt', value: 1000 }, measures: [{ op: 'count' }] });
    expect(none.body.groups).toEqual([{ key: {}, values: [0] }]);
  });

  it('groups each option of a multiSelect, a boolean, and two fields at once', async () => {
    const tags = await aggregate({ groupBy: [{ field: 'tags' }], measures: [{ op: 'count' }] });
    expectGroups(
      tags,
      ['tags'],
      handCount(
        (d) => (d.tags.length === 0 ? [[null]] : d.tags.map((t) => [t])),
        (g) => [g.length],
      ),
    );
    const two = await aggregate({
      groupBy: [{ field: 'closed' }, { field: 'stage' }],
      measures: [{ op: 'count' }, { op: 'sum', field: 'qty' }],
    });
    expectGroups(
      two,
      ['closed', 'stage'],
      handCount(
        (d) => [[d.closed, d.stage]],
        (g) => [g.length, sum(g.map((d) => d.qty))],
      ).sort((a, b) => Number(a.key[0]) - Number(b.key[0])),
    );
  });

  it('groups a date by month, a date-time by week (its Monday, UTC), by creator and year', async () => {
    const months = await aggregate({
      groupBy: [{ field: 'closeDate', interval: 'month' }],
      measures: [{ op: 'count' }],
    });
    expectGroups(
      months,
      ['closeDate'],
      handCount(
        (d) => [[d.closeDate.slice(0, 7)]],
        (g) => [g.length],
      ),
    );
    const monday = (iso: string): string => {
      const day = new Date(iso.slice(0, 10) + 'T00:00:00Z');
      day.setUTCDate(day.getUTCDate() - ((day.getUTCDay() + 6) % 7));
      return day.toISOString().slice(0, 10);
    };
    const weeks = await aggregate({
      groupBy: [{ field: 'signedAt', interval: 'week' }],
      measures: [{ op: 'count' }, { op: 'max', field: 'signedAt' }],
    });
    expectGroups(
      weeks,
      ['signedAt'],
      handCount(
        (d) => [[monday(d.signedAt)]],
        (g) => [
          g.length,
          g
            .map((d) => d.signedAt)
            .sort()
            .at(-1),
        ],
      ),
    );
    const byCreator = await aggregate({ groupBy: [{ field: 'createdBy' }], measures: [{ op: 'count' }] });
    expect(byCreator.body.groups).toEqual(
      editors.map((e, by) => ({ key: { createdBy: e.id }, values: [deals.filter((d) => d.by === by).length] })),
    );
    const years = await aggregate({
      groupBy: [{ field: 'createdAt', interval: 'year' }],
      measures: [{ op: 'count' }],
    });
    expect(years.body.groups).toEqual([{ key: { createdAt: String(new Date().getUTCFullYear()) }, values: [N] }]);
  });

  it('keeps the records a filter keeps, and pages its groups with a cursor bound to the body', async () => {
    const filter = { field: 'qty', op: 'gte', value: 2 };
    const body = { filter, groupBy: [{ field: 'note' }], measures: [{ op: 'count' }] };
    const expected = handCount(
      (d) => (d.qty >= 2 ? [[`n${d.qty}`]] : []),
      (g) => [g.length],
    );
    const seen: unknown[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof aggregate>> = await aggregate({
        ...body,
        limit: 2,
        ...(cursor === null ? {} : { cursor }),
      });
      expect(page.status).toBe(200);
      seen.push(...page.body.groups.map((g: { key: { note: string }; values: number[] }) => [g.key.note, g.values]));
      cursor = page.body.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual(expected.map((g) => [g.key[0], g.values]));
    const first = await aggregate({ ...body, limit: 2 });
    const foreign = await aggregate({
      ...body,
      measures: [{ op: 'sum', field: 'qty' }],
      cursor: first.body.nextCursor,
    });
    expectProblem(foreign, 400, 'invalid_request');
    expect(foreign.body.errors).toEqual([expect.objectContaining({ pointer: '/cursor', code: 'invalid_cursor' })]);
  });

  it('refuses bad input with every problem at its pointer, 422 when each is one of meaning', async () => {
    const many = await aggregate({
      groupBy: [{ field: 'stage' }, { field: 'closed' }, { field: 'qty' }],
      measures: Array.from({ length: 11 }, () => ({ op: 'count' })),
    });
    expectProblem(many, 400, 'invalid_request');
    expect(many.body.errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code])).toEqual([
      ['/groupBy', 'too_many'],
      ['/measures', 'too_many'],
    ]);
    const meaning = await aggregate({
      groupBy: [{ field: 'amount' }, { field: 'qty', interval: 'month' }],
      measures: [
        { op: 'sum', field: 'note' },
        { op: 'avg', field: 'closeDate' },
      ],
    });
    expectProblem(meaning, 422, 'unprocessable');
    expect(meaning.body.errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code])).toEqual([
      ['/groupBy/0/field', 'not_groupable'],
      ['/groupBy/1/interval', 'not_a_date'],
      ['/measures/0/field', 'not_measurable'],
      ['/measures/1/field', 'not_measurable'],
    ]);
    const unknown = await aggregate({
      objectId: 'x',
      groupBy: [{ field: 'nope' }],
      measures: [{ op: 'median', field: 'qty' }],
      filter: { field: 'nope', op: 'eq', value: 1 },
      extra: true,
    });
    expectProblem(unknown, 400, 'invalid_request');
    expect(unknown.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(
      ['/extra', '/filter/field', '/groupBy/0/field', '/measures/0/op', '/objectId'].sort(),
    );
    const noMeasures = await aggregate({ measures: [] });
    expectProblem(noMeasures, 400, 'invalid_request');
    const datetime = await aggregate({ groupBy: [{ field: 'signedAt' }], measures: [{ op: 'count' }] });
    expect(datetime.body.errors).toEqual([
      expect.objectContaining({ pointer: '/groupBy/0/interval', code: 'required' }),
    ]);
    // A stranger learns nothing of the workspace; no key: 401.
    const stranger = await newUser('stranger');
    expect((await aggregate({ measures: [{ op: 'count' }] }, stranger.key)).status).toBe(404);
    expect((await call('POST', `/workspaces/${workspaceId}/records/aggregate`, { body: {} })).status).toBe(401);
  });
});

describe('aggregates and access', () => {
  it('counts only the records a role lets its member read; a field it hides is as one not there', async () => {
    const w = await roleWorld();
    const as = (body: Record<string, unknown>) =>
      call('POST', `/workspaces/${w.workspaceId}/records/aggregate`, {
        key: w.member.key,
        body: { objectId: w.deal.id, measures: [{ op: 'count' }], ...body },
      });
    const mine = await call('POST', `/workspaces/${w.workspaceId}/records/query`, {
      key: w.member.key,
      body: { filter: { field: 'objectId', op: 'eq', value: w.deal.id }, count: true },
    });
    const counted = await as({});
    expect(counted.body.groups).toEqual([{ key: {}, values: [mine.body.count.value] }]);
    const owners = await call('POST', `/workspaces/${w.workspaceId}/records/aggregate`, {
      key: w.owner.key,
      body: { objectId: w.deal.id, measures: [{ op: 'count' }] },
    });
    expect(owners.body.groups[0].values[0]).toBeGreaterThan(mine.body.count.value);
    const hidden = await as({ measures: [{ op: 'sum', field: 'salary' }] });
    const missing = await as({ measures: [{ op: 'sum', field: 'nothing' }] });
    expect(JSON.stringify(hidden.body).replace('salary', 'nothing')).toEqual(JSON.stringify(missing.body));
  });
});

describe('odd values and names', () => {
  async function object(fields: unknown[]) {
    const editor = await newUser('editor');
    const space = await newWorkspace({ [editor.id]: 'editor' });
    const made = await admin('POST', '/admin/objects', { name: 'T', workspaceIds: [space], fields });
    const ask = (body: Record<string, unknown>) =>
      call('POST', `/workspaces/${space}/records/aggregate`, {
        key: editor.key,
        body: { objectId: made.body.id, ...body },
      });
    return { editor, space, id: made.body.id as number, ask };
  }

  it('sums whole numbers past what SQLite adds as integers, as doubles', async () => {
    const { space, id, ask } = await object([{ name: 'amount', type: 'integer' }]);
    const big = Number.MAX_SAFE_INTEGER;
    await bulkRecords(id, space, 1025, `json_array(json_object('fieldName', 'amount', 'value', ${big}))`);
    const answer = await ask({
      measures: [
        { op: 'sum', field: 'amount' },
        { op: 'avg', field: 'amount' },
      ],
    });
    expect(answer.status).toBe(200);
    const [sum, avg] = answer.body.groups[0].values;
    // Doubles: the sum as JavaScript adds it, the average within a rounding of the value.
    expect(sum).toBe(1025 * big);
    expect(Math.abs(avg - big)).toBeLessThanOrEqual(2);
  });

  it('takes a field named as a property every object has, and no such name for a field it lacks', async () => {
    const { editor, id, ask } = await object([{ name: 'constructor', type: 'integer' }]);
    expect(
      (
        await call('POST', '/records/batch', {
          key: editor.key,
          body: [{ objectId: id, fieldValues: [fv('constructor', 3)] }],
        })
      ).status,
    ).toBe(201);
    const sum = await ask({ groupBy: [{ field: 'constructor' }], measures: [{ op: 'sum', field: 'constructor' }] });
    expect(sum.body.groups).toEqual([{ key: { constructor: 3 }, values: [3] }]);
    const missing = await ask({ groupBy: [{ field: 'nope' }], measures: [{ op: 'count' }] });
    const inherited = await ask({ groupBy: [{ field: 'toString' }], measures: [{ op: 'count' }] });
    expect(JSON.stringify(inherited.body).replace('toString', 'nope')).toEqual(JSON.stringify(missing.body));
    const people = await ask({ measures: [{ op: 'sum', field: 'createdBy' }] });
    expect(people.body.errors).toEqual([
      expect.objectContaining({ pointer: '/measures/0/field', code: 'not_measurable' }),
    ]);
  });

  it('groups a multiSelect whose records still hold text from before its type changed', async () => {
    const { editor, space, id, ask } = await object([{ name: 'tags', type: 'text' }]);
    expect(
      (
        await call('POST', '/records/batch', {
          key: editor.key,
          body: [{ objectId: id, fieldValues: [fv('tags', 'hello')] }],
        })
      ).status,
    ).toBe(201);
    const changed = {
      name: 'T',
      workspaceIds: [space],
      fields: [{ name: 'tags', type: 'multiSelect', options: ['a'] }],
    };
    expect((await admin('PUT', `/admin/objects/${id}`, changed)).status).toBe(200);
    expect(
      (
        await call('POST', '/records/batch', {
          key: editor.key,
          body: [{ objectId: id, fieldValues: [fv('tags', ['a'])] }],
        })
      ).status,
    ).toBe(201);
    const answer = await ask({ groupBy: [{ field: 'tags' }], measures: [{ op: 'count' }] });
    expect(answer.body.groups).toEqual([
      { key: { tags: 'a' }, values: [1] },
      { key: { tags: null }, values: [1] },
    ]);
    // A query's `contains` reads it as holding no option, never as an error.
    const found = await call('POST', `/workspaces/${space}/records/query`, {
      key: editor.key,
      body: { filter: { field: 'tags', op: 'contains', value: 'a' }, count: true },
    });
    expect(found.body.count).toEqual({ value: 1, exact: true });
  });
});

describe('the bound', () => {
  it('reads at most 20,000 records (fewer by the options of a multiSelect), then is not exact', async () => {
    const editor = await newUser('editor');
    const space = await newWorkspace({ [editor.id]: 'editor' });
    const fields = [
      { name: 'qty', type: 'integer' },
      { name: 'tags', type: 'multiSelect', options: ['a', 'b', 'c', 'd', 'e'] },
    ];
    const many = (await admin('POST', '/admin/objects', { name: 'Many', workspaceIds: [space], fields })).body.id;
    await bulkRecords(
      many,
      space,
      20_001,
      `json_array(json_object('fieldName', 'qty', 'value', i % 3),
        json_object('fieldName', 'tags', 'value', json('["a","b","c","d","e"]')))`,
    );
    const ask = (groupBy: unknown[]) =>
      call('POST', `/workspaces/${space}/records/aggregate`, {
        key: editor.key,
        body: { objectId: many, groupBy, measures: [{ op: 'count' }] },
      });
    const byQty = await ask([{ field: 'qty' }]);
    expect(byQty.body.exact).toBe(false);
    const counted = byQty.body.groups.map((g: { values: number[] }) => g.values[0]);
    expect(counted.reduce((a: number, b: number) => a + b)).toBe(18_000);
    // Each record in five groups: 90,000 rows / (3 + 2 × 5) = 6,923 records.
    expect(rowsRead(byQty)).toBeLessThanOrEqual(100_000);
    const byTags = await ask([{ field: 'tags' }]);
    expect(byTags.body.exact).toBe(false);
    expect(byTags.body.groups.map((g: { key: { tags: string } }) => g.key.tags)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(rowsRead(byTags)).toBeLessThanOrEqual(100_000);
    const twice = await ask([{ field: 'tags' }, { field: 'tags' }]);
    expect(twice.body.errors).toEqual([expect.objectContaining({ pointer: '/groupBy/1/field', code: 'duplicate' })]);
  }, 60_000);
});
