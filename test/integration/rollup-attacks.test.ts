import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import {
  admin,
  bulkRecords,
  call,
  createOne,
  download,
  finished,
  fv,
  newUser,
  newWorkspace,
  queryRecords,
  upload,
  valuesOf,
  walkQuery,
} from './helpers.ts';

/**
 * Attacks on rollup fields (migration 0029): every kind of write of the records that reference one,
 * compared with a count made by hand from the records table; definitions that change them; reads,
 * queries, aggregates, roles, exports. A test that fails here shows a bug.
 */

type Op = 'count' | 'sum' | 'avg' | 'min' | 'max';
interface RollupSpec {
  name: string;
  field: string;
  op: Op;
  of?: string;
}

/** The rollups every world defines on Account, over Order's references. */
const SPECS: RollupSpec[] = [
  { name: 'n', field: 'account', op: 'count' },
  { name: 's', field: 'account', op: 'sum', of: 'amount' },
  { name: 'av', field: 'account', op: 'avg', of: 'amount' },
  { name: 'lo', field: 'account', op: 'min', of: 'amount' },
  { name: 'hi', field: 'account', op: 'max', of: 'qty' },
  { name: 'mn', field: 'accounts', op: 'count' },
  { name: 'ms', field: 'accounts', op: 'sum', of: 'amount' },
  { name: 'mlo', field: 'accounts', op: 'min', of: 'amount' },
  { name: 'mhi', field: 'accounts', op: 'max', of: 'amount' },
  { name: 'fs', field: 'account', op: 'sum', of: 'double' },
];

const ORDER_FIELDS = (accountId: number) => [
  { name: 'code', type: 'text', unique: true },
  { name: 'account', type: 'reference', target: accountId, onDelete: 'keep' },
  { name: 'accounts', type: 'reference', target: accountId, multiple: true, onDelete: 'keep' },
  { name: 'amount', type: 'number' },
  { name: 'qty', type: 'integer' },
  { name: 'double', type: 'formula', expression: 'amount * 2', resultType: 'number' },
];

const rollupDef = (spec: RollupSpec, orderId: number) => ({
  name: spec.name,
  type: 'rollup',
  from: { objectId: orderId, field: spec.field },
  op: spec.op,
  ...(spec.of === undefined ? {} : { of: spec.of }),
});

async function world(specs: RollupSpec[] = SPECS) {
  const editor = await newUser('editor');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const account = (
    await admin('POST', '/admin/objects', {
      name: 'Account',
      workspaceIds: [workspaceId],
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }],
    })
  ).body;
  const made = await admin('POST', '/admin/objects', {
    name: 'Order',
    workspaceIds: [workspaceId],
    fields: ORDER_FIELDS(account.id),
  });
  expect(made.status).toBe(201);
  const order = made.body;
  const defineAccount = (rollups: unknown[], extra: unknown[] = []) =>
    admin('PUT', `/admin/objects/${account.id}`, {
      name: 'Account',
      workspaceIds: [workspaceId],
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }, ...extra, ...rollups],
    });
  const defined = await defineAccount(specs.map((s) => rollupDef(s, order.id)));
  expect(defined.status, JSON.stringify(defined.body)).toBe(200);
  const key = editor.key;
  const newAccount = async (title: string) => (await createOne(key, account.id, [fv('title', title)])).id as number;
  const newOrder = async (values: Record<string, unknown>) =>
    (await createOne(key, order.id, Object.entries(values).map(([k, v]) => fv(k, v)))) as {
      id: number;
      version: number;
    };
  const patch = async (id: number, values: Record<string, unknown>) => {
    const answer = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
      key,
      body: { fieldValues: Object.entries(values).map(([k, v]) => fv(k, v)) },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body;
  };
  const remove = async (id: number) =>
    expect((await call('DELETE', `/workspaces/${workspaceId}/records/${id}`, { key })).status).toBe(200);
  const restore = async (id: number) =>
    expect((await call('POST', `/workspaces/${workspaceId}/records/${id}/restore`, { key })).status).toBe(200);
  return { editor, key, workspaceId, account, order, defineAccount, newAccount, newOrder, patch, remove, restore };
}

/** The live records of `objectId` with their values, read straight from D1. */
async function liveValues(objectId: number): Promise<Record<string, unknown>[]> {
  const rows = await env.DB.prepare('SELECT field_values FROM records WHERE object_id = ? AND deleted = 0')
    .bind(objectId)
    .all<{ field_values: string }>();
  return rows.results.map((r) =>
    Object.fromEntries(
      (JSON.parse(r.field_values) as { fieldName: string; value: unknown }[]).map((e) => [e.fieldName, e.value]),
    ),
  );
}

/** What the rollups of `specs` should show on record `target`, by hand (a record counts once). */
function byHand(records: Record<string, unknown>[], target: number, specs: RollupSpec[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const spec of specs) {
    const refs = records.filter((r) => {
      const v = r[spec.field];
      return Array.isArray(v) ? v.includes(target) : v === target;
    });
    if (spec.op === 'count') {
      out[spec.name] = refs.length;
      continue;
    }
    const nums = refs.map((r) => r[spec.of!]).filter((v): v is number => typeof v === 'number');
    const sum = nums.reduce((a, b) => a + b, 0);
    if (spec.op === 'sum') out[spec.name] = sum;
    else if (nums.length > 0)
      out[spec.name] = spec.op === 'avg' ? sum / nums.length : spec.op === 'min' ? Math.min(...nums) : Math.max(...nums);
  }
  return out;
}

async function shown(key: string, id: number, specs: RollupSpec[]) {
  const read = await call('GET', `/records/${id}`, { key });
  expect(read.status).toBe(200);
  const values = valuesOf(read.body);
  const names = new Set(specs.map((s) => s.name));
  return {
    values: Object.fromEntries(Object.entries(values).filter(([k]) => names.has(k))),
    version: read.body.version as number,
  };
}

/** Every target's rollups as read, against the hand count; and the targets never get a new version. */
async function expectExact(w: Awaited<ReturnType<typeof world>>, targets: number[], specs = SPECS) {
  const records = await liveValues(w.order.id);
  for (const target of targets) {
    const { values, version } = await shown(w.key, target, specs);
    expect(values, `rollups of ${target}`).toEqual(byHand(records, target, specs));
    expect(version).toBe(1);
  }
}

const rollupRows = async (objectId: number) =>
  (
    await env.DB.prepare(
      'SELECT record_id, field, value, n, total, role FROM record_index WHERE object_id = ? AND role = 4 ORDER BY record_id, field',
    )
      .bind(objectId)
      .all<{ record_id: number; field: string; value: unknown; n: number; total: number; role: number }>()
  ).results;

describe('rollup attacks: writes of the referencing records', () => {
  it('multiple references: ids added and removed one at a time, moved, with the number in the same write', async () => {
    const w = await world();
    const [a, b, c] = [await w.newAccount('A'), await w.newAccount('B'), await w.newAccount('C')];
    const o1 = await w.newOrder({ accounts: [a, b], amount: 5 });
    const o2 = await w.newOrder({ accounts: [b], amount: -3.5 });
    const o3 = await w.newOrder({ accounts: [a, b, c], amount: 7, account: a });
    await expectExact(w, [a, b, c]);
    // One id added, one removed, the number changed in the same write.
    await w.patch(o1.id, { accounts: [b, c], amount: 1 });
    await expectExact(w, [a, b, c]);
    // The least of b leaves by losing its reference only.
    await w.patch(o2.id, { accounts: [a, c] });
    await expectExact(w, [a, b, c]);
    // The greatest of a leaves, the number changes on the ones that stay.
    await w.patch(o3.id, { accounts: [b], amount: 100 });
    await expectExact(w, [a, b, c]);
    // Emptied, then cleared.
    await w.patch(o3.id, { accounts: [] });
    await w.patch(o1.id, { accounts: null });
    await expectExact(w, [a, b, c]);
    await w.remove(o2.id);
    await expectExact(w, [a, b, c]);
    await w.restore(o2.id);
    await expectExact(w, [a, b, c]);
  });

  it('the same id twice in a reference of several counts the record once (or is refused)', async () => {
    const w = await world();
    const a = await w.newAccount('A');
    const made = await call('POST', '/records/batch', {
      key: w.key,
      body: [{ objectId: w.order.id, fieldValues: [fv('accounts', [a, a]), fv('amount', 4)] }],
    });
    if (made.status !== 201) {
      expect(made.status).toBe(400);
      return;
    }
    const stored = (await liveValues(w.order.id))[0]!;
    // Whatever was stored, the rollup counts the records that reference a.
    expect(stored.accounts).toBeDefined();
    const { values } = await shown(w.key, a, SPECS);
    expect(values.mn).toBe(1);
    expect(values.ms).toBe(4);
    // And what the definition's build computes is the same as what the writes kept.
    const before = await rollupRows(w.account.id);
    await w.defineAccount(SPECS.filter((s) => s.field === 'account').map((s) => rollupDef(s, w.order.id)));
    await w.defineAccount(SPECS.map((s) => rollupDef(s, w.order.id)));
    expect(await rollupRows(w.account.id)).toEqual(before);
  });

  it('min and max: ties, negatives, decimals, the holder leaving, a value patched away', async () => {
    const w = await world();
    const [a, b] = [await w.newAccount('A'), await w.newAccount('B')];
    const o = [];
    for (const [amount, qty] of [
      [-2, 5],
      [-2, 5],
      [3.25, -1],
      [-0.5, 9],
    ] as const)
      o.push(await w.newOrder({ account: a, amount, qty, accounts: [a] }));
    await expectExact(w, [a, b]);
    // One of the two tied least leaves: the least is still -2.
    await w.remove(o[0]!.id);
    await expectExact(w, [a, b]);
    // The other moves to b: the least of a is read again.
    await w.patch(o[1]!.id, { account: b, accounts: [b] });
    await expectExact(w, [a, b]);
    // The greatest qty loses its number only.
    await w.patch(o[3]!.id, { qty: null });
    await expectExact(w, [a, b]);
    // A value going up past the greatest while the least goes down in another record.
    await w.patch(o[2]!.id, { qty: 50, amount: -1e9 });
    await expectExact(w, [a, b]);
    await w.restore(o[0]!.id);
    await expectExact(w, [a, b]);
    await w.patch(o[0]!.id, { amount: null, qty: null });
    await w.patch(o[2]!.id, { amount: null, qty: null });
    await w.patch(o[3]!.id, { amount: null });
    await expectExact(w, [a, b]);
  });

  it('a sum of decimals stays what the remaining records add up to', async () => {
    const w = await world();
    const a = await w.newAccount('A');
    const x = await w.newOrder({ account: a, amount: 0.1 });
    await w.newOrder({ account: a, amount: 0.2 });
    await w.remove(x.id);
    // One order of 0.2 is left: its sum and average are 0.2.
    const left = await shown(w.key, a, SPECS);
    expect(left.values.s).toBe(0.2);
    expect(left.values.av).toBe(0.2);
  });

  it('a sum keeps a small number once a large one leaves', async () => {
    const w = await world();
    const a = await w.newAccount('A');
    const big = await w.newOrder({ account: a, amount: 1e20 });
    await w.newOrder({ account: a, amount: 1 });
    await w.remove(big.id);
    const left = await shown(w.key, a, SPECS);
    expect(left.values).toMatchObject({ n: 1, s: 1, av: 1, lo: 1 });
  });

  it('PATCH /records/batch moving several records between two targets in one statement', async () => {
    const w = await world();
    const [a, b] = [await w.newAccount('A'), await w.newAccount('B')];
    const orders = [];
    for (let i = 0; i < 8; i++)
      orders.push(await w.newOrder({ account: i % 2 ? a : b, accounts: [a, b], amount: i - 3, qty: 10 - i }));
    await expectExact(w, [a, b]);
    const answer = await call('PATCH', '/records/batch', {
      key: w.key,
      body: orders.map((o, i) => ({
        id: o.id,
        fieldValues: [
          fv('account', i % 2 ? b : a),
          fv('amount', i % 3 === 0 ? null : 10 * i),
          fv('accounts', i % 2 ? [a] : [b]),
        ],
      })),
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    await expectExact(w, [a, b]);
  });

  it('upserts and imports (NDJSON create, CSV update) of referencing records', async () => {
    const w = await world();
    const [a, b] = [await w.newAccount('A'), await w.newAccount('B')];
    await w.newOrder({ code: 'k1', account: a, amount: 2 });
    const up = await call('POST', `/objects/${w.order.id}/records/upsert`, {
      key: w.key,
      body: {
        matchOn: 'code',
        items: [
          { fieldValues: [fv('code', 'k1'), fv('account', b), fv('amount', 9)] },
          { fieldValues: [fv('code', 'k2'), fv('account', a), fv('amount', 4), fv('accounts', [a, b])] },
        ],
      },
    });
    expect(up.status, JSON.stringify(up.body)).toBeLessThan(300);
    await expectExact(w, [a, b]);
    const lines = [
      JSON.stringify({ fieldValues: [fv('code', 'k3'), fv('account', a), fv('amount', 1.5), fv('qty', 3)] }),
      JSON.stringify({ fieldValues: [fv('code', 'k4'), fv('account', b), fv('accounts', [b]), fv('qty', 8)] }),
    ];
    const imported = await upload(w.key, w.workspaceId, `objectId=${w.order.id}`, lines.join('\n'));
    expect(imported.status).toBe(202);
    expect((await finished(w.key, imported.body.id)).status).toBe('succeeded');
    await expectExact(w, [a, b]);
    // A CSV upsert moves k3 to b and gives k4 an amount; a column named like a rollup changes nothing.
    const csv = `code,account,amount\r\nk3,${b},6\r\nk4,${b},-2\r\nk5,${a},11\r\n`;
    const csvUp = await upload(w.key, w.workspaceId, `objectId=${w.order.id}&mode=upsert&matchOn=code`, csv, 'text/csv');
    expect(csvUp.status, JSON.stringify(csvUp.body)).toBe(202);
    const done = await finished(w.key, csvUp.body.id);
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    expect(done.rows.failed).toBe(0);
    await expectExact(w, [a, b]);
  });

  it('a formula read as `of` follows its inputs, and its recomputation after the formula changes', async () => {
    const w = await world();
    const a = await w.newAccount('A');
    const o = await w.newOrder({ account: a, amount: 3 });
    await w.newOrder({ account: a, amount: 4 });
    await expectExact(w, [a]);
    await w.patch(o.id, { amount: 10 });
    await expectExact(w, [a]);
    // The formula changes: the records are computed again in the background, and the rollup follows.
    const fields = ORDER_FIELDS(w.account.id).map((f) =>
      f.name === 'double' ? { ...f, expression: 'amount * 3' } : f,
    );
    const changed = await admin('PUT', `/admin/objects/${w.order.id}`, {
      name: 'Order',
      workspaceIds: [w.workspaceId],
      fields,
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    for (let i = 0; i < 100; i++) {
      const build = await env.DB.prepare("SELECT 1 AS x FROM index_builds WHERE object_id = ? AND field = '=formulas'")
        .bind(w.order.id)
        .first();
      if (build === null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const values = await liveValues(w.order.id);
    expect(values.map((v) => v.double).sort()).toEqual([12, 30]);
    await expectExact(w, [a]);
  });

  it('a self-referencing object: a record referencing itself, children moved and deleted', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const node = (
      await admin('POST', '/admin/objects', {
        name: 'Node',
        workspaceIds: [workspaceId],
        fields: [{ name: 'size', type: 'number' }],
      })
    ).body;
    const fields = [
      { name: 'size', type: 'number' },
      { name: 'parent', type: 'reference', target: node.id, onDelete: 'keep' },
      { name: 'kids', type: 'rollup', from: { objectId: node.id, field: 'parent' }, op: 'count' },
      { name: 'total', type: 'rollup', from: { objectId: node.id, field: 'parent' }, op: 'sum', of: 'size' },
      { name: 'least', type: 'rollup', from: { objectId: node.id, field: 'parent' }, op: 'min', of: 'size' },
    ];
    const defined = await admin('PUT', `/admin/objects/${node.id}`, { name: 'Node', workspaceIds: [workspaceId], fields });
    expect(defined.status, JSON.stringify(defined.body)).toBe(200);
    const specs: RollupSpec[] = [
      { name: 'kids', field: 'parent', op: 'count' },
      { name: 'total', field: 'parent', op: 'sum', of: 'size' },
      { name: 'least', field: 'parent', op: 'min', of: 'size' },
    ];
    const root = (await createOne(editor.key, node.id, [fv('size', 1)])).id as number;
    const mid = (await createOne(editor.key, node.id, [fv('size', 2), fv('parent', root)])).id as number;
    const leaf = (await createOne(editor.key, node.id, [fv('size', 3), fv('parent', mid)])).id as number;
    const patch = async (id: number, values: unknown[]) => {
      const answer = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
        key: editor.key,
        body: { fieldValues: values },
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    };
    const check = async () => {
      const records = await liveValues(node.id);
      for (const id of [root, mid, leaf]) {
        const { values } = await shown(editor.key, id, specs);
        expect(values, `node ${id}`).toEqual(byHand(records, id, specs));
      }
    };
    await check();
    // The root references itself, with its size changed in the same write.
    await patch(root, [fv('parent', root), fv('size', -4)]);
    await check();
    await patch(leaf, [fv('parent', root)]);
    await check();
    expect((await call('DELETE', `/workspaces/${workspaceId}/records/${root}`, { key: editor.key })).status).toBe(200);
    await check();
    // The rollup's definition is built again (op changed and back) from what is stored.
    const before = await rollupRows(node.id);
    const other = fields.map((f) => (f.name === 'least' ? { ...f, op: 'max' } : f));
    expect((await admin('PUT', `/admin/objects/${node.id}`, { name: 'Node', workspaceIds: [workspaceId], fields: other })).status).toBe(200);
    expect((await admin('PUT', `/admin/objects/${node.id}`, { name: 'Node', workspaceIds: [workspaceId], fields })).status).toBe(200);
    expect(await rollupRows(node.id)).toEqual(before);
    // Taking the reference out while the rollup still reads it is refused.
    const away = await admin('PUT', `/admin/objects/${node.id}`, {
      name: 'Node',
      workspaceIds: [workspaceId],
      fields: fields.filter((f) => f.name !== 'parent'),
    });
    expect(away.status).toBe(422);
  });
});
