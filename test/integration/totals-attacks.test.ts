import { env } from 'cloudflare:workers';
import { beforeAll, expect, it } from 'vitest';
import { admin, call, fv, newUser, newWorkspace, untilIndexBuilt } from './helpers.ts';
import { expectTotalsExact } from './totals.ts';

/**
 * Kept totals as a reviewer broke them: an aggregate read from the totals answers what reading the
 * records answers after a field stops being unique, with text kept in a field now a number, and
 * with whole numbers past 2^53 added and taken away.
 */

let key: string;
let ws: number;
beforeAll(async () => {
  const u = await newUser('editor');
  key = u.key;
  ws = await newWorkspace({ [u.id]: 'editor' });
});
const put = async (id: number, fields: object[]) => {
  expect((await admin('PUT', `/admin/objects/${id}`, { name: `O${id}`, workspaceIds: [ws], fields })).status).toBe(200);
  await untilIndexBuilt(id);
};
async function object(fields: object[], rows: unknown[][]): Promise<{ id: number; ids: number[] }> {
  const id = (await admin('POST', '/admin/objects', { name: `O${Math.random()}`, workspaceIds: [ws], fields })).body.id;
  const made = await call('POST', '/records/batch', {
    key,
    body: rows.map((fieldValues) => ({ objectId: id, fieldValues })),
  });
  expect(made.status).toBe(201);
  return { id, ids: made.body.map((m: any) => m.record.id) };
}
// The same aggregate from the kept totals and by reading the records (a filter every record passes).
async function expectSame(objectId: number, body: object) {
  const ask = (extra: object) =>
    call('POST', `/workspaces/${ws}/records/aggregate`, { key, body: { objectId, limit: 1000, ...body, ...extra } });
  const [kept, read] = [await ask({}), await ask({ filter: { field: 'createdAt', op: 'gte', value: 0 } })];
  expect(kept.body.groups).toEqual(read.body.groups);
  await expectTotalsExact(env.DB);
}
const G = { name: 'g', type: 'select', options: ['x'], indexed: true };

it('a field no longer unique is grouped by its values', async () => {
  const { id } = await object(
    [{ name: 't', type: 'text', indexed: true, unique: true }],
    [[fv('t', 'a')], [fv('t', 'b')]],
  );
  await put(id, [{ name: 't', type: 'text', indexed: true }]);
  await expectSame(id, { groupBy: [{ field: 't' }], measures: [{ op: 'count' }] });
});

it('text kept in a field now a number is no number to either', async () => {
  const { id } = await object(
    [G, { name: 's', type: 'text', indexed: true }],
    [
      [fv('g', 'x'), fv('s', '12')],
      [fv('g', 'x'), fv('s', 'abc')],
    ],
  );
  await put(id, [G, { name: 's', type: 'number', indexed: true }]);
  await call('POST', '/records/batch', { key, body: [{ objectId: id, fieldValues: [fv('g', 'x'), fv('s', 10)] }] });
  await expectSame(id, {
    groupBy: [{ field: 'g' }],
    measures: [
      { op: 'sum', field: 's' },
      { op: 'avg', field: 's' },
    ],
  });
});

it('whole numbers add exactly past 2^53', async () => {
  const { id, ids } = await object(
    [G, { name: 'k', type: 'integer', indexed: true }],
    [
      [fv('g', 'x'), fv('k', 2 ** 53 - 1)],
      [fv('g', 'x'), fv('k', 2)],
    ],
  );
  const patched = await call('PATCH', `/workspaces/${ws}/records/${ids[0]}`, {
    key,
    body: { fieldValues: [fv('k', 0)] },
  });
  expect(patched.status).toBe(200);
  await expectSame(id, { groupBy: [{ field: 'g' }], measures: [{ op: 'sum', field: 'k' }] });
});
