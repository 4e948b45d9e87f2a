import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import {
  admin,
  call,
  createOne,
  fv,
  indexBuilder,
  newUser,
  newWorkspace,
  queryRecords,
  untilIndexBuilt,
  valuesOf,
} from './helpers.ts';

/**
 * Rollup fields: a record's count, sum, average, least and greatest over the live records that
 * reference it by one field, kept exact by every write of those records in its own transaction,
 * without a new version of the record; sorted and filtered by its index.
 */

const ROLLUPS = [
  { name: 'orders', type: 'rollup', from: { objectId: 0, field: 'account' }, op: 'count' },
  { name: 'revenue', type: 'rollup', from: { objectId: 0, field: 'account' }, op: 'sum', of: 'amount' },
  { name: 'average', type: 'rollup', from: { objectId: 0, field: 'account' }, op: 'avg', of: 'amount' },
  { name: 'smallest', type: 'rollup', from: { objectId: 0, field: 'account' }, op: 'min', of: 'amount' },
  { name: 'largest', type: 'rollup', from: { objectId: 0, field: 'account' }, op: 'max', of: 'qty' },
];

async function setup() {
  const editor = await newUser('editor');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const created = async (definition: Record<string, unknown>) => {
    const made = await admin('POST', '/admin/objects', definition);
    expect(made.status).toBe(201);
    return made.body;
  };
  const accountFields = [{ name: 'title', type: 'text' }];
  const account = await created({
    name: 'Account',
    workspaceIds: [workspaceId],
    nameTemplate: '{title}',
    fields: accountFields,
  });
  const order = await created({
    name: 'Order',
    workspaceIds: [workspaceId],
    fields: [
      { name: 'account', type: 'reference', target: account.id, onDelete: 'keep' },
      { name: 'amount', type: 'number' },
      { name: 'qty', type: 'integer' },
    ],
  });
  const rollups = ROLLUPS.map((field) => ({ ...field, from: { ...field.from, objectId: order.id } }));
  // A new or changed rollup is computed for the records written before it in the background.
  const define = async (fields: unknown[]) => {
    const answer = await admin('PUT', `/admin/objects/${account.id}`, {
      name: 'Account',
      workspaceIds: [workspaceId],
      nameTemplate: '{title}',
      fields: [...accountFields, ...fields],
    });
    if (answer.status === 200) await untilIndexBuilt(account.id);
    return answer;
  };
  return { editor, workspaceId, account, order, rollups, define };
}

type Order = { account?: number; amount?: number; qty?: number; deleted?: boolean };

/** What each account's rollups should be, counted by hand from the orders. */
function byHand(orders: readonly Order[], accountId: number): Record<string, unknown> {
  const live = orders.filter((o) => !o.deleted && o.account === accountId);
  const amounts = live.flatMap((o) => (o.amount === undefined ? [] : [o.amount]));
  const qtys = live.flatMap((o) => (o.qty === undefined ? [] : [o.qty]));
  const out: Record<string, unknown> = { orders: live.length, revenue: amounts.reduce((a, b) => a + b, 0) };
  if (amounts.length > 0) {
    out.average = amounts.reduce((a, b) => a + b, 0) / amounts.length;
    out.smallest = Math.min(...amounts);
  }
  if (qtys.length > 0) out.largest = Math.max(...qtys);
  return out;
}

async function rollupsOf(key: string, id: number): Promise<{ values: Record<string, unknown>; version: number }> {
  const read = await call('GET', `/records/${id}`, { key });
  expect(read.status).toBe(200);
  const values = valuesOf(read.body);
  delete values.title;
  return { values, version: read.body.version };
}

describe('rollup fields', () => {
  it('are computed for existing records when defined, and follow every kind of write', async () => {
    const { editor, workspaceId, account, order, rollups, define } = await setup();
    const key = editor.key;
    const a = await createOne(key, account.id, [fv('title', 'A')]);
    const b = await createOne(key, account.id, [fv('title', 'B')]);
    const orders: (Order & { id: number; version: number })[] = [];
    const make = async (o: Order) => {
      const values = Object.entries(o).map(([name, value]) => fv(name, value));
      const made = await createOne(key, order.id, values);
      orders.push({ ...o, id: made.id, version: made.version });
    };
    await make({ account: a.id, amount: 10, qty: 1 });
    await make({ account: a.id, amount: 2.5, qty: 7 });
    await make({ account: b.id, amount: 4 });
    await make({ amount: 100 });

    expect((await define(rollups)).status).toBe(200);
    const check = async () => {
      for (const target of [a, b]) {
        const { values, version } = await rollupsOf(key, target.id);
        expect(values).toEqual(byHand(orders, target.id));
        // The account itself was never written.
        expect(version).toBe(1);
      }
    };
    await check();

    // Created, alone and in a batch.
    await make({ account: a.id, amount: 1, qty: 3 });
    const batch = await call('POST', '/records/batch', {
      key,
      body: [
        { objectId: order.id, fieldValues: [fv('account', b.id), fv('amount', 6), fv('qty', 9)] },
        { objectId: order.id, fieldValues: [fv('account', b.id)] },
      ],
    });
    expect(batch.status).toBe(201);
    for (const [i, item] of batch.body.entries())
      orders.push({ account: b.id, ...(i === 0 ? { amount: 6, qty: 9 } : {}), id: item.record.id, version: 1 });
    await check();

    const patch = async (o: (typeof orders)[number], values: Record<string, unknown>) => {
      const answer = await call('PATCH', `/workspaces/${workspaceId}/records/${o.id}`, {
        key,
        body: { fieldValues: Object.entries(values).map(([name, value]) => fv(name, value)) },
      });
      expect(answer.status).toBe(200);
      for (const [name, value] of Object.entries(values))
        if (value === null) delete (o as Record<string, unknown>)[name];
        else (o as Record<string, unknown>)[name] = value;
      o.version = answer.body.version;
    };
    // The smallest amount changes, then leaves: the least is read again.
    await patch(orders[1]!, { amount: 50 });
    await check();
    await patch(orders[4]!, { amount: null });
    await check();
    // Moved to another account, with its number changed in the same write.
    await patch(orders[0]!, { account: b.id, amount: 11 });
    await check();
    // A reference added to an order that had none.
    await patch(orders[3]!, { account: a.id });
    await check();

    // Deleted and restored.
    const del = await call('DELETE', `/workspaces/${workspaceId}/records/${orders[5]!.id}`, { key });
    expect(del.status).toBe(200);
    orders[5]!.deleted = true;
    await check();
    const restore = await call('POST', `/workspaces/${workspaceId}/records/${orders[5]!.id}/restore`, { key });
    expect(restore.status).toBe(200);
    orders[5]!.deleted = false;
    await check();

    // A batch of patches, one moving its reference away.
    const many = await call('PATCH', '/records/batch', {
      key,
      body: [
        { id: orders[2]!.id, fieldValues: [fv('amount', 8)] },
        { id: orders[6]!.id, fieldValues: [fv('account', a.id)] },
      ],
    });
    expect(many.status).toBe(200);
    orders[2]!.amount = 8;
    orders[6]!.account = a.id;
    await check();
  });

  it('are computed for older records in the background, a chunk at a time, while writes go on', async () => {
    const { editor, account, order, rollups } = await setup();
    const builder = indexBuilder(account.id);
    await builder.hold();
    const accounts: number[] = [];
    for (let batch = 0; batch < 8; batch++) {
      const made = await call('POST', '/records/batch', {
        key: editor.key,
        body: Array.from({ length: 20 }, (_, i) => ({
          objectId: account.id,
          fieldValues: [fv('title', `A${batch * 20 + i}`)],
        })),
      });
      accounts.push(...made.body.map((item: any) => item.record.id as number));
    }
    const [first, last] = [accounts[0]!, accounts.at(-1)!];
    for (const target of [first, last]) await createOne(editor.key, order.id, [fv('account', target), fv('amount', 2)]);
    const before = (await admin('GET', `/admin/objects/${account.id}`)).body;
    const { id: _id, version: _version, ...definition } = before;
    const put = await admin('PUT', `/admin/objects/${account.id}`, {
      ...definition,
      fields: [...definition.fields, ...rollups],
    });
    expect(put.status).toBe(200);
    const computing = async () => (await admin('GET', `/admin/objects/${account.id}`)).body.computing;
    expect(await computing()).toEqual({ rollups: { afterRecordId: -1 } });
    // Not reached yet: no value.
    expect((await rollupsOf(editor.key, first)).values).toEqual({});

    expect(await builder.stepOnce(account.id)).toBe(true);
    expect(await computing()).toEqual({ rollups: { afterRecordId: accounts[99] } });
    expect((await rollupsOf(editor.key, first)).values).toMatchObject({ orders: 1, revenue: 2 });
    expect((await rollupsOf(editor.key, last)).values).toEqual({});
    // Writes meanwhile: kept where reached, counted when reached elsewhere.
    await createOne(editor.key, order.id, [fv('account', first), fv('amount', 3)]);
    await createOne(editor.key, order.id, [fv('account', last), fv('amount', 5)]);
    await builder.stepOnce(account.id);
    expect(await computing()).toBeUndefined();
    expect((await rollupsOf(editor.key, first)).values).toEqual({ orders: 2, revenue: 5, average: 2.5, smallest: 2 });
    expect((await rollupsOf(editor.key, last)).values).toEqual({ orders: 2, revenue: 7, average: 3.5, smallest: 2 });
    const middle = await rollupsOf(editor.key, accounts[120]!);
    expect(middle).toEqual({ values: { orders: 0, revenue: 0 }, version: 1 });
    await builder.release(account.id);
  });

  it('never lose an increment to concurrent writes of the records that reference one', async () => {
    const { editor, workspaceId, account, order, rollups, define } = await setup();
    expect((await define(rollups)).status).toBe(200);
    const a = await createOne(editor.key, account.id, [fv('title', 'A')]);
    const made = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call('POST', '/records/batch', {
          key: editor.key,
          body: [{ objectId: order.id, fieldValues: [fv('account', a.id), fv('amount', i + 1), fv('qty', i)] }],
        }),
      ),
    );
    expect(made.map((m) => m.status)).toEqual(made.map(() => 201));
    const ids = made.map((m) => m.body[0].record.id as number);
    // Twenty of them patched at once, ten deleted at once.
    const patched = await Promise.all(
      ids.slice(0, 20).map((id) =>
        call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
          key: editor.key,
          body: { fieldValues: [fv('amount', 1000)] },
        }),
      ),
    );
    expect(patched.every((p) => p.status === 200)).toBe(true);
    const deleted = await Promise.all(
      ids.slice(30).map((id) => call('DELETE', `/workspaces/${workspaceId}/records/${id}`, { key: editor.key })),
    );
    expect(deleted.every((d) => d.status === 200)).toBe(true);
    const orders: Order[] = ids.map((_, i) => ({
      account: a.id,
      amount: i < 20 ? 1000 : i + 1,
      qty: i,
      deleted: i >= 30,
    }));
    const { values, version } = await rollupsOf(editor.key, a.id);
    expect(values).toEqual(byHand(orders, a.id));
    expect(values.orders).toBe(30);
    expect(version).toBe(1);
  });

  it('sort and filter through their index', async () => {
    const { editor, workspaceId, account, order, rollups, define } = await setup();
    expect((await define(rollups)).status).toBe(200);
    const accounts = [];
    for (const [i, title] of ['A', 'B', 'C', 'D'].entries()) {
      const made = await createOne(editor.key, account.id, [fv('title', title)]);
      accounts.push(made);
      for (let n = 0; n < i; n++)
        await createOne(editor.key, order.id, [fv('account', made.id), fv('amount', 10 * (4 - i))]);
    }
    const sorted = await queryRecords(editor.key, workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: account.id },
      sort: [{ field: 'orders', direction: 'desc' }],
    });
    expect(sorted.status).toBe(200);
    expect(sorted.body.items.map((r: any) => r.name)).toEqual(['D', 'C', 'B', 'A']);
    expect(sorted.body.items.map((r: any) => valuesOf(r).revenue)).toEqual([30, 40, 30, 0]);
    const filtered = await queryRecords(editor.key, workspaceId, {
      filter: {
        and: [
          { field: 'revenue', op: 'gte', value: 30 },
          { field: 'smallest', op: 'lt', value: 25 },
        ],
      },
      sort: [{ field: 'revenue', direction: 'asc' }],
      count: true,
    });
    expect(filtered.status).toBe(200);
    expect(filtered.body.items.map((r: any) => r.name)).toEqual(['D', 'C']);
    expect(filtered.body.count).toEqual({ value: 2, exact: true });
  });

  it('are never written, and a definition naming what it cannot read is refused with every problem', async () => {
    const { editor, workspaceId, account, order, rollups, define } = await setup();
    expect((await define(rollups)).status).toBe(200);
    const a = await createOne(editor.key, account.id, [fv('title', 'A')]);
    const written = await call('PATCH', `/workspaces/${workspaceId}/records/${a.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('revenue', 5)] },
    });
    expect(written.status).toBe(422);
    expect(written.body.errors).toMatchObject([{ pointer: '/fieldValues/0', code: 'read_only_field' }]);

    const before = await admin('GET', `/admin/objects/${account.id}`);
    const bad = await define([
      { name: 'x1', type: 'rollup', from: { objectId: order.id, field: 'amount' }, op: 'count' },
      { name: 'x2', type: 'rollup', from: { objectId: order.id, field: 'account' }, op: 'sum', of: 'account' },
      { name: 'x3', type: 'rollup', from: { objectId: 99_999, field: 'account' }, op: 'max', of: 'qty' },
      { name: 'x4', type: 'rollup', from: { objectId: order.id, field: 'account' }, op: 'sum', of: 'nothing' },
    ]);
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/fields/1/from/field', 'invalid_rollup'],
      ['/fields/2/of', 'invalid_rollup'],
      ['/fields/3/from/objectId', 'unknown_object'],
      ['/fields/4/of', 'invalid_rollup'],
    ]);
    const shape = await define([
      { name: 'y1', type: 'rollup', from: { objectId: order.id, field: 'account' }, op: 'sum' },
      { name: 'y2', type: 'rollup', from: { objectId: order.id, field: 'account' }, op: 'count', of: 'qty' },
      { name: 'y3', type: 'rollup', op: 'count', indexed: true },
      { name: 'y4', type: 'number', op: 'count' },
    ]);
    expect(shape.status).toBe(400);
    expect(shape.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/fields/1/of', 'required'],
      ['/fields/2/of', 'not_allowed'],
      ['/fields/3/from', 'required'],
      ['/fields/3/indexed', 'not_allowed'],
      ['/fields/4/op', 'not_allowed'],
    ]);
    expect((await admin('GET', `/admin/objects/${account.id}`)).body).toEqual(before.body);

    // The orders keep what the rollups read.
    const orderDef = (await admin('GET', `/admin/objects/${order.id}`)).body;
    const away = await admin('PUT', `/admin/objects/${order.id}`, {
      name: orderDef.name,
      workspaceIds: orderDef.workspaceIds,
      fields: [
        { name: 'account', type: 'reference', target: account.id, onDelete: 'keep' },
        { name: 'qty', type: 'text' },
      ],
    });
    expect(away.status).toBe(422);
    expect(away.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/fields', 'read_by_rollup'],
      ['/fields', 'read_by_rollup'],
      ['/fields', 'read_by_rollup'],
      ['/fields/1/type', 'read_by_rollup'],
    ]);
    const rows = await env.DB.prepare('SELECT count(*) AS n FROM record_index WHERE object_id = ? AND role = 4')
      .bind(account.id)
      .first<{ n: number }>();
    expect(rows?.n).toBe(5);
  });
});
