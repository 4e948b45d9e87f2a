import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, call, fv, newUser, newWorkspace, rowsRead, untilIndexBuilt } from './helpers.ts';
import { expectTotalsExact } from './totals.ts';

/**
 * Totals kept per group: every kind of write keeps them equal to a count of the records (checked
 * against one made from scratch), and an aggregate by an indexed field answers from them what
 * reading the records answers, exactly, reading a row a group.
 */

const STAGES = ['lead', 'won', 'lost'];
const N = 160;

let editor: { id: number; key: string };
let workspaceId: number;
let dealId: number;
let otherId: number;
let definition: { name: string; workspaceIds: number[]; fields: Record<string, unknown>[] };
const ids: number[] = [];

const values = (i: number) => {
  const r = (i * 7919 + 13) % 101;
  return [
    ...(i % 7 === 0 ? [] : [fv('stage', STAGES[r % 3])]),
    fv('closed', r % 2 === 0),
    fv('qty', (r % 9) - 2),
    ...(i % 11 === 0 ? [] : [fv('amount', (r * 37 + i) / 4)]),
    fv('note', `n${r % 5}`),
    fv('rank', r % 4),
    fv('code', `c${i}`),
  ];
};

const aggregate = (body: Record<string, unknown>) =>
  call('POST', `/workspaces/${workspaceId}/records/aggregate`, {
    key: editor.key,
    body: { objectId: dealId, ...body },
  });
// A filter every record passes: the aggregate reads the records instead of the totals.
const EVERY = { field: 'createdAt', op: 'gte', value: 0 };

async function patchAll(bodies: { id: number; body: unknown }[]): Promise<void> {
  const answers = await Promise.all(
    bodies.map(({ id, body }) => call('PATCH', `/workspaces/${workspaceId}/records/${id}`, { key: editor.key, body })),
  );
  for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

beforeAll(async () => {
  editor = await newUser('editor');
  workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  definition = {
    name: 'Deal',
    workspaceIds: [workspaceId],
    fields: [
      { name: 'stage', type: 'select', options: STAGES, indexed: true },
      { name: 'closed', type: 'boolean', indexed: true },
      { name: 'qty', type: 'integer', indexed: true },
      { name: 'amount', type: 'number', indexed: true },
      { name: 'note', type: 'text', indexed: true },
      { name: 'rank', type: 'integer' },
      { name: 'code', type: 'text', unique: true },
      { name: 'memo', type: 'text' },
    ],
  };
  dealId = (await admin('POST', '/admin/objects', definition)).body.id;
  otherId = (
    await admin('POST', '/admin/objects', {
      name: 'Other',
      workspaceIds: [workspaceId],
      fields: [{ name: 'qty', type: 'integer', indexed: true }],
    })
  ).body.id;
  for (let from = 0; from < N; from += 20) {
    const body = Array.from({ length: 20 }, (_, j) => ({ objectId: dealId, fieldValues: values(from + j) }));
    const made = await call('POST', '/records/batch', { key: editor.key, body });
    expect(made.status, JSON.stringify(made.body).slice(0, 400)).toBe(201);
    ids.push(...made.body.map((item: any) => item.record.id));
  }
  const others = Array.from({ length: 20 }, (_, i) => ({ objectId: otherId, fieldValues: [fv('qty', i)] }));
  expect((await call('POST', '/records/batch', { key: editor.key, body: others })).status).toBe(201);
});

describe('kept totals', () => {
  it('equal a count of the records after creates, patches (many at once), batches, upserts, deletes', async () => {
    expect(await expectTotalsExact(env.DB)).toBeGreaterThan(20);
    // Forty records patched at once, each moving to another stage and amount.
    await patchAll(
      ids.slice(0, 40).map((id, i) => ({
        id,
        body: { fieldValues: [fv('stage', STAGES[i % 3]), fv('amount', i * 2.5), fv('closed', i % 3 === 0)] },
      })),
    );
    // One record patched by many at once: its turns serialize, and each moves its groups.
    await patchAll(
      Array.from({ length: 12 }, (_, i) => ({
        id: ids[41]!,
        body: { fieldValues: [fv('qty', i), fv('note', `x${i}`)] },
      })),
    );
    // A value removed leaves its group for the blanks.
    await patchAll([{ id: ids[42]!, body: { fieldValues: [fv('amount', null), fv('stage', null)] } }]);
    const batch = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: ids.slice(50, 70).map((id, i) => ({ id, fieldValues: [fv('qty', 100 + i), fv('stage', 'won')] })),
    });
    expect(batch.status).toBe(200);
    const upsert = await call('POST', `/objects/${dealId}/records/upsert`, {
      key: editor.key,
      body: {
        matchOn: 'code',
        items: [
          { fieldValues: [fv('code', 'c3'), fv('qty', 7), fv('amount', 1.5), fv('stage', 'lead')] },
          { fieldValues: [fv('code', 'new'), fv('qty', 8), fv('amount', 2.5), fv('stage', 'won')] },
        ],
      },
    });
    expect(upsert.status, JSON.stringify(upsert.body)).toBe(200);
    await expectTotalsExact(env.DB);
    const gone = ids.slice(80, 95);
    for (const answer of await Promise.all(
      gone.map((id) => call('DELETE', `/workspaces/${workspaceId}/records/${id}`, { key: editor.key })),
    ))
      expect(answer.status).toBe(200);
    await expectTotalsExact(env.DB);
    for (const id of gone.slice(0, 5))
      expect((await call('POST', `/workspaces/${workspaceId}/records/${id}/restore`, { key: editor.key })).status).toBe(
        200,
      );
    // A deleted record's patch is refused (409); its totals stay out.
    expect(
      (
        await call('PATCH', `/workspaces/${workspaceId}/records/${gone[9]}`, {
          key: editor.key,
          body: { fieldValues: [] },
        })
      ).status,
    ).toBe(409);
    await expectTotalsExact(env.DB);
  });

  it('answer an aggregate by an indexed field as reading the records does, exactly, a row a group', async () => {
    const measures = [
      { op: 'count' },
      { op: 'sum', field: 'amount' },
      { op: 'avg', field: 'amount' },
      { op: 'sum', field: 'qty' },
    ];
    for (const groupBy of [[], [{ field: 'stage' }], [{ field: 'closed' }], [{ field: 'qty' }], [{ field: 'note' }]]) {
      const kept = await aggregate({ groupBy, measures, limit: 1000 });
      const read = await aggregate({ groupBy, measures, limit: 1000, filter: EVERY });
      expect(kept.status, JSON.stringify(kept.body)).toBe(200);
      expect(kept.body.exact).toBe(true);
      expect(read.status, JSON.stringify(read.body)).toBe(200);
      expect(kept.body.groups.map((g: any) => g.key)).toEqual(read.body.groups.map((g: any) => g.key));
      kept.body.groups.forEach((group: any, i: number) => {
        const [count, sum, avg, qty] = read.body.groups[i].values;
        expect(group.values[0]).toBe(count);
        expect(group.values[3]).toBe(qty);
        for (const [at, want] of [
          [1, sum],
          [2, avg],
        ] as const)
          if (want === null) expect(group.values[at]).toBeNull();
          else expect(group.values[at]).toBeCloseTo(want, 6);
      });
      expect(rowsRead(kept)).toBeLessThanOrEqual(kept.body.groups.length + 40);
      expect(rowsRead(kept)).toBeLessThan(rowsRead(read));
    }
    // Pages of groups from the totals.
    const first = await aggregate({ groupBy: [{ field: 'stage' }], measures: [{ op: 'count' }], limit: 2 });
    const second = await aggregate({
      groupBy: [{ field: 'stage' }],
      measures: [{ op: 'count' }],
      cursor: first.body.nextCursor,
    });
    const all = await aggregate({ groupBy: [{ field: 'stage' }], measures: [{ op: 'count' }] });
    expect([...first.body.groups, ...second.body.groups]).toEqual(all.body.groups);
    expect(all.body.groups.map((g: any) => g.key.stage)).toEqual(['lead', 'lost', 'won', null]);
  });

  it('follow a field indexed later (built in the background) and one no longer indexed', async () => {
    const fields = definition.fields.map((f) => (f.name === 'rank' ? { ...f, indexed: true } : f));
    expect((await admin('PUT', `/admin/objects/${dealId}`, { ...definition, fields })).status).toBe(200);
    await untilIndexBuilt(dealId);
    await expectTotalsExact(env.DB);
    const byRank = await aggregate({ groupBy: [{ field: 'rank' }], measures: [{ op: 'count' }] });
    const read = await aggregate({ groupBy: [{ field: 'rank' }], measures: [{ op: 'count' }], filter: EVERY });
    expect(byRank.body.groups).toEqual(read.body.groups);
    expect(rowsRead(byRank)).toBeLessThan(40);
    const unindexed = fields.map((f) => (f.name === 'stage' ? { ...f, indexed: false } : f));
    expect((await admin('PUT', `/admin/objects/${dealId}`, { ...definition, fields: unindexed })).status).toBe(200);
    await expectTotalsExact(env.DB);
    const stage = await env.DB.prepare(`SELECT count(*) AS n FROM record_totals WHERE field = 'stage'`).first<{
      n: number;
    }>();
    expect(stage?.n).toBe(0);
  });
});

describe('what the totals cost a write', () => {
  it('a changed group costs ~2 rows a workspace; a changed number a row per group of its record', async () => {
    const path = `/workspaces/${workspaceId}/records/${ids[120]}`;
    const written = async (fieldValues: unknown[]): Promise<number> => {
      const answer = await call('PATCH', path, { key: editor.key, body: { fieldValues } });
      expect(answer.status).toBe(200);
      return Number(/rows;desc="(\d+) written/.exec(answer.headers.get('Server-Timing') ?? '')?.[1]);
    };
    const plain = await written([fv('memo', 'm')]);
    // An indexed value costs its index and sort key (+2 each way, as without totals), its groups +2 or +3.
    expect(await written([fv('closed', true)])).toBeLessThanOrEqual(plain + 2 + 3);
    // The record is in 4 groups (closed, qty, note, rank) and its object's row: its number moves in each.
    expect(await written([fv('amount', 999)])).toBeLessThanOrEqual(plain + 2 + 5 + 1);
    await expectTotalsExact(env.DB);
  });
});
