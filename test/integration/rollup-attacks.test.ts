import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { database, mover, movingTenant, stepMove } from './moving.ts';
import { byHand, liveValues, rollupDef, type RollupSpec } from './rollup-counts.ts';
import {
  admin as adminCall,
  bulkRecords,
  call,
  createOne,
  download,
  finished,
  fv,
  newUser,
  newWorkspace,
  queryRecords,
  roundTrips,
  rowsRead,
  upload,
  valuesOf,
  untilIndexBuilt,
  walkQuery,
} from './helpers.ts';

/**
 * Attacks on rollup fields (migration 0029): every kind of write of the records that reference one,
 * compared with a count made by hand from the records table; definitions that change them; reads,
 * queries, aggregates, roles, exports.
 */

/**
 * The admin API; a definition of an object then waits until its rollups (and indexes) are computed
 * for the records written before, which happens in the background.
 */
async function admin(method: string, path: string, body?: unknown): Promise<any> {
  const answer = await adminCall(method, path, body);
  const object = /^\/admin\/objects\/(\d+)$/.exec(path)?.[1];
  if (method === 'PUT' && object !== undefined && answer.status === 200) await untilRollupsComputed(Number(object));
  return answer;
}

/** Waits until no computation of the object's rollups is due. */
async function untilRollupsComputed(objectId: number): Promise<void> {
  for (let i = 0; i < 1_000; i++) {
    const due = await env.DB.prepare(
      "SELECT count(*) AS n FROM index_builds WHERE object_id = ? AND field = '=rollups'",
    )
      .bind(objectId)
      .first<{ n: number }>();
    if (due?.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`rollups of object ${objectId} not computed`);
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
    (await createOne(
      key,
      order.id,
      Object.entries(values).map(([k, v]) => fv(k, v)),
    )) as {
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
async function expectExact(
  w: Awaited<ReturnType<typeof world>>,
  targets: number[],
  specs = SPECS,
  versions: Record<number, number> = {},
) {
  const records = await liveValues(w.order.id);
  for (const target of targets) {
    const { values, version } = await shown(w.key, target, specs);
    expect(values, `rollups of ${target}`).toEqual(byHand(records, target, specs));
    expect(version).toBe(versions[target] ?? 1);
  }
}

const rollupRows = async (objectId: number) =>
  (
    await env.DB.prepare(
      'SELECT record_id, field, value, n, total, role FROM record_index WHERE object_id = ? AND role = 4 ' +
        'ORDER BY record_id, field',
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
    await w.patch(o3.id, { accounts: null });
    await w.patch(o1.id, { accounts: null, amount: null });
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
      expect([400, 422]).toContain(made.status);
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

  // A difference of doubles keeps the rounding of what left (0.1 + 0.2 - 0.1 = 0.20000000000000004): a sum
  // holding decimals is added up again from the records left when a number leaves it.
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

  // The same at scale: 2^52 - 0.5 + 0.25 rounds; once the large order leaves, the one order of 0.25 sums to
  // 0.25 (and so averages).
  it('a sum keeps a small number once a large one leaves', async () => {
    const w = await world();
    const a = await w.newAccount('A');
    // 2^52 - 0.5: a double holds it exactly, and 0.25 beside it is lost in their sum.
    const big = await w.newOrder({ account: a, amount: 4503599627370495.5 });
    await w.newOrder({ account: a, amount: 0.25 });
    await w.remove(big.id);
    const left = await shown(w.key, a, SPECS);
    expect(left.values).toMatchObject({ n: 1, s: 0.25, av: 0.25, lo: 0.25 });
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
    const csvUp = await upload(
      w.key,
      w.workspaceId,
      `objectId=${w.order.id}&mode=upsert&matchOn=code`,
      csv,
      'text/csv',
    );
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
    const defined = await admin('PUT', `/admin/objects/${node.id}`, {
      name: 'Node',
      workspaceIds: [workspaceId],
      fields,
    });
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
    expect(
      (await admin('PUT', `/admin/objects/${node.id}`, { name: 'Node', workspaceIds: [workspaceId], fields: other }))
        .status,
    ).toBe(200);
    expect(
      (await admin('PUT', `/admin/objects/${node.id}`, { name: 'Node', workspaceIds: [workspaceId], fields })).status,
    ).toBe(200);
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

describe('rollup attacks: definitions', () => {
  it('a changed op or of is computed again; a renamed or removed rollup leaves no rows', async () => {
    const w = await world();
    const [a, b] = [await w.newAccount('A'), await w.newAccount('B')];
    await w.newOrder({ account: a, amount: 2, qty: 7, accounts: [a, b] });
    await w.newOrder({ account: a, amount: -6, qty: 1 });
    await w.newOrder({ account: b, amount: 5 });
    const changed: RollupSpec[] = SPECS.map((s) =>
      s.name === 's'
        ? { ...s, op: 'max' as const }
        : s.name === 'lo'
          ? { ...s, of: 'qty' }
          : s.name === 'n'
            ? { ...s, name: 'cnt' }
            : s,
    ).filter((s) => s.name !== 'mhi');
    const answer = await w.defineAccount(changed.map((s) => rollupDef(s, w.order.id)));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    await expectExact(w, [a, b], changed);
    const names = new Set((await rollupRows(w.account.id)).map((r) => r.field));
    expect([...names].sort()).toEqual(changed.map((s) => s.name).sort());
    // Writes after the change keep the new ones.
    await w.newOrder({ account: b, amount: 50, qty: -3, accounts: [a] });
    await expectExact(w, [a, b], changed);
  });

  // The rollup's rows (role 4) must not become the new indexed field's rows: its old counts would stay in
  // the index and the kept totals (an aggregate would sum 2 though no account holds a value of n).
  it('a rollup whose name becomes an indexed number field leaves no rollup value behind', async () => {
    const w = await world([{ name: 'n', field: 'account', op: 'count' }]);
    const a = await w.newAccount('A');
    await w.newOrder({ account: a });
    await w.newOrder({ account: a });
    expect((await shown(w.key, a, [{ name: 'n', field: 'account', op: 'count' }])).values).toEqual({ n: 2 });
    const answer = await w.defineAccount([], [{ name: 'n', type: 'integer', indexed: true }]);
    if (answer.status !== 200) {
      // Refused is fine too (like a lookup's name), as long as nothing changed.
      expect(answer.status).toBe(422);
      return;
    }
    await untilIndexBuilt(w.account.id);
    // The account holds no value of its new field n: nothing may find it by n = 2, or sum it.
    const read = await call('GET', `/records/${a}`, { key: w.key });
    const found = await queryRecords(w.key, w.workspaceId, {
      filter: {
        and: [
          { field: 'objectId', op: 'eq', value: w.account.id },
          { field: 'n', op: 'eq', value: 2 },
        ],
      },
    });
    const sorted = await queryRecords(w.key, w.workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: w.account.id },
      sort: [{ field: 'n', direction: 'desc' }],
    });
    const sum = await call('POST', `/workspaces/${w.workspaceId}/records/aggregate`, {
      key: w.key,
      body: { objectId: w.account.id, measures: [{ op: 'sum', field: 'n' }, { op: 'count' }] },
    });
    const rows = await env.DB.prepare("SELECT value, role FROM record_index WHERE record_id = ? AND field = 'n'")
      .bind(a)
      .all();
    expect({
      read: valuesOf(read.body).n,
      found: found.body.items?.map((r: any) => r.id),
      sortedValue: sorted.body.items?.map((r: any) => valuesOf(r).n),
      sum: sum.body.groups,
      rows: rows.results,
    }).toEqual({
      read: undefined,
      found: [],
      sortedValue: [undefined],
      sum: [{ key: {}, values: [null, 1] }],
      rows: [],
    });
  });

  it('bad rollups are refused with every problem, nothing stored', async () => {
    const w = await world([]);
    const before = await admin('GET', `/admin/objects/${w.account.id}`);
    const bad = await w.defineAccount([
      // A reference of several, to this object: fine. A min of a formula giving text: not a number.
      { name: 'r1', type: 'rollup', from: { objectId: w.order.id, field: 'code' }, op: 'count' },
      { name: 'r2', type: 'rollup', from: { objectId: w.order.id, field: 'account' }, op: 'min', of: 'code' },
      { name: 'r3', type: 'rollup', from: { objectId: w.account.id, field: 'account' }, op: 'count' },
    ]);
    expect([400, 422]).toContain(bad.status);
    const pointers = bad.body.errors.map((e: any) => e.pointer);
    expect(pointers).toEqual(expect.arrayContaining(['/fields/1/from/field', '/fields/2/of', '/fields/3/from/field']));
    expect((await admin('GET', `/admin/objects/${w.account.id}`)).body).toEqual(before.body);
    expect(await rollupRows(w.account.id)).toEqual([]);
    // A rollup of a rollup, a lookup, or a name in the name template.
    const more = await admin('PUT', `/admin/objects/${w.account.id}`, {
      name: 'Account',
      workspaceIds: [w.workspaceId],
      nameTemplate: '{title} {r5}',
      fields: [
        { name: 'title', type: 'text' },
        { name: 'r5', type: 'rollup', from: { objectId: w.order.id, field: 'account' }, op: 'count' },
        { name: 'r6', type: 'rollup', from: { objectId: w.order.id, field: 'account' }, op: 'sum', of: 'r5' },
        { name: 'r7', type: 'rollup', from: { objectId: w.order.id, field: 'account' }, op: 'avg', of: 'accounts' },
      ],
    });
    expect([400, 422]).toContain(more.status);
    expect((await admin('GET', `/admin/objects/${w.account.id}`)).body).toEqual(before.body);
    // A read_by_rollup: the number read must stay a number.
    await w.defineAccount([rollupDef({ name: 's', field: 'account', op: 'sum', of: 'qty' }, w.order.id)]);
    const retyped = await admin('PUT', `/admin/objects/${w.order.id}`, {
      name: 'Order',
      workspaceIds: [w.workspaceId],
      fields: ORDER_FIELDS(w.account.id).map((f) => (f.name === 'qty' ? { name: 'qty', type: 'text' } : f)),
    });
    expect(retyped.status).toBe(422);
    expect(retyped.body.errors.map((e: any) => e.code)).toContain('read_by_rollup');
  });

  // SQLite's sum() raises `integer overflow` past 2^63: the computation adds as doubles there. Each value is
  // a valid integer (<= 2^53 - 1).
  it('a rollup defined over more whole numbers than 2^63 holds is computed, not refused with an error', async () => {
    const w = await world([]);
    const a = await w.newAccount('A');
    const max = Number.MAX_SAFE_INTEGER;
    await bulkRecords(
      w.order.id,
      w.workspaceId,
      1100,
      `json_array(json_object('fieldName', 'account', 'value', ${a}),
        json_object('fieldName', 'qty', 'value', ${max}))`,
      `'Bulk ' || i`,
      w.editor.id,
    );
    expect((await shown(w.key, a, [])).version).toBe(1);
    const answer = await w.defineAccount([
      rollupDef({ name: 's', field: 'account', op: 'sum', of: 'qty' }, w.order.id),
      rollupDef({ name: 'av', field: 'account', op: 'avg', of: 'qty' }, w.order.id),
    ]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const { values } = await shown(w.key, a, [
      { name: 's', field: 'account', op: 'sum', of: 'qty' },
      { name: 'av', field: 'account', op: 'avg', of: 'qty' },
    ]);
    expect((values.s as number) / (1100 * max)).toBeCloseTo(1, 10);
    expect((values.av as number) / max).toBeCloseTo(1, 10);
  });
});

describe('rollup attacks: reads, queries, aggregates, access', () => {
  /** Twelve accounts with 0–5 orders each, some numbers missing; `Other` accounts' titles do not match the search. */
  async function populated() {
    const w = await world();
    const accounts: number[] = [];
    for (let i = 0; i < 12; i++) {
      const id = await w.newAccount(i % 4 === 3 ? `Other ${i}` : `Acme ${i}`);
      accounts.push(id);
      const orders = (i * 5) % 6;
      const batch = Array.from({ length: orders }, (_, k) => ({
        objectId: w.order.id,
        fieldValues: [
          fv('account', id),
          ...(k === 1 ? [] : [fv('amount', ((i * 7 + k * 3) % 11) - 4)]),
          fv('qty', k),
          ...(k === 0 ? [fv('accounts', [id, accounts[0]!])] : []),
        ],
      }));
      if (batch.length > 0) {
        const made = await call('POST', '/records/batch', { key: w.key, body: batch });
        expect(made.status).toBe(201);
      }
    }
    return { w, accounts };
  }

  const handOf = async (w: Awaited<ReturnType<typeof world>>, accounts: number[]) => {
    const records = await liveValues(w.order.id);
    return new Map(accounts.map((id) => [id, byHand(records, id, SPECS)]));
  };

  it('filters, sorts, search, count and cursors agree with a hand count; deleted targets leave', async () => {
    const { w, accounts } = await populated();
    // One account deleted: queries leave it out.
    await w.remove(accounts[5]!);
    const live = accounts.filter((id) => id !== accounts[5]);
    const hand = await handOf(w, live);
    const titles = new Map<number, string>();
    for (const id of live) titles.set(id, (await call('GET', `/records/${id}`, { key: w.key })).body.name);
    const cases: {
      filter: unknown;
      sort: { field: string; direction: 'asc' | 'desc' }[];
      search?: string;
      pick: (id: number) => boolean;
    }[] = [
      {
        filter: {
          and: [
            { field: 'objectId', op: 'eq', value: w.account.id },
            { field: 'n', op: 'gte', value: 2 },
          ],
        },
        sort: [{ field: 's', direction: 'desc' }],
        pick: (id) => (hand.get(id)!.n as number) >= 2,
      },
      {
        filter: { field: 'objectId', op: 'eq', value: w.account.id },
        sort: [{ field: 'lo', direction: 'asc' }],
        pick: () => true,
      },
      {
        filter: {
          and: [
            { field: 'objectId', op: 'eq', value: w.account.id },
            {
              or: [
                { field: 'hi', op: 'lt', value: 3 },
                { field: 'av', op: 'gt', value: 1 },
              ],
            },
          ],
        },
        sort: [{ field: 'av', direction: 'desc' }],
        search: 'acme',
        pick: (id) =>
          titles.get(id)!.startsWith('Acme') &&
          ((hand.get(id)!.hi !== undefined && (hand.get(id)!.hi as number) < 3) ||
            (hand.get(id)!.av !== undefined && (hand.get(id)!.av as number) > 1)),
      },
      {
        filter: {
          and: [
            { field: 'objectId', op: 'eq', value: w.account.id },
            { field: 'mn', op: 'eq', value: 1 },
          ],
        },
        sort: [{ field: 'n', direction: 'asc' }],
        pick: (id) => hand.get(id)!.mn === 1,
      },
    ];
    for (const c of cases) {
      const field = c.sort[0]!.field;
      const desc = c.sort[0]!.direction === 'desc';
      const expected = live.filter(c.pick).sort((x, y) => {
        const [vx, vy] = [hand.get(x)![field] as number | undefined, hand.get(y)![field] as number | undefined];
        // Records without a value come after those with one, by id in the same direction.
        if (vx === undefined || vy === undefined) return vx === vy ? (desc ? y - x : x - y) : vx === undefined ? 1 : -1;
        return vx === vy ? (desc ? y - x : x - y) : desc ? vy - vx : vx - vy;
      });
      const body = { filter: c.filter, sort: c.sort, limit: 2, ...(c.search ? { search: c.search } : {}) };
      const walked = await walkQuery(w.key, w.workspaceId, body);
      expect(walked.ids, JSON.stringify(c)).toEqual(expected);
      const counted = await queryRecords(w.key, w.workspaceId, { ...body, count: true });
      expect(counted.body.count, JSON.stringify(c)).toEqual({ value: expected.length, exact: true });
    }
    // Restored: back with its rollups.
    await w.restore(accounts[5]!);
    const again = await queryRecords(w.key, w.workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: w.account.id },
      sort: [{ field: 'n', direction: 'desc' }],
      limit: 100,
    });
    expect(again.body.items.map((r: any) => r.id)).toContain(accounts[5]);
    expect(valuesOf(again.body.items.find((r: any) => r.id === accounts[5]))).toMatchObject(
      (await handOf(w, [accounts[5]!])).get(accounts[5]!)!,
    );
  });

  it('an object shared with two workspaces sorts by its rollups in each, and shows them there', async () => {
    const editor = await newUser('editor');
    const ws1 = await newWorkspace({ [editor.id]: 'editor' });
    const ws2 = await newWorkspace({ [editor.id]: 'editor' });
    const account = (
      await admin('POST', '/admin/objects', {
        name: 'Account',
        workspaceIds: [ws1, ws2],
        fields: [{ name: 'title', type: 'text' }],
      })
    ).body;
    const order = (
      await admin('POST', '/admin/objects', {
        name: 'Order',
        workspaceIds: [ws1],
        fields: ORDER_FIELDS(account.id),
      })
    ).body;
    const a = (await createOne(editor.key, account.id, [fv('title', 'A')])).id;
    const b = (await createOne(editor.key, account.id, [fv('title', 'B')])).id;
    await createOne(editor.key, order.id, [fv('account', a), fv('amount', 1)]);
    const defined = await admin('PUT', `/admin/objects/${account.id}`, {
      name: 'Account',
      workspaceIds: [ws1, ws2],
      fields: [
        { name: 'title', type: 'text' },
        rollupDef({ name: 's', field: 'account', op: 'sum', of: 'amount' }, order.id),
      ],
    });
    expect(defined.status).toBe(200);
    for (let k = 0; k < 3; k++) await createOne(editor.key, order.id, [fv('account', b), fv('amount', 2)]);
    for (const ws of [ws1, ws2]) {
      const sorted = await queryRecords(editor.key, ws, {
        filter: { field: 'objectId', op: 'eq', value: account.id },
        sort: [{ field: 's', direction: 'desc' }],
      });
      expect(sorted.status).toBe(200);
      expect(sorted.body.items.map((r: any) => [r.id, valuesOf(r).s])).toEqual([
        [b, 6],
        [a, 1],
      ]);
      const listed = await call('GET', `/workspaces/${ws}/records?objectId=${account.id}`, { key: editor.key });
      expect(listed.status).toBe(200);
      expect(listed.body.items.map((r: any) => valuesOf(r).s).sort(), 'a list shows the rollups too').toEqual([1, 6]);
    }
  });

  it('aggregates group by a count rollup and measure the others, as a hand count does', async () => {
    const { w, accounts } = await populated();
    const hand = await handOf(w, accounts);
    const answer = await call('POST', `/workspaces/${w.workspaceId}/records/aggregate`, {
      key: w.key,
      body: {
        objectId: w.account.id,
        groupBy: [{ field: 'n' }],
        measures: [{ op: 'count' }, { op: 'sum', field: 's' }, { op: 'min', field: 'lo' }, { op: 'max', field: 'hi' }],
      },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const groups = new Map<number, number[]>();
    for (const id of accounts) {
      const n = hand.get(id)!.n as number;
      groups.set(n, [...(groups.get(n) ?? []), id]);
    }
    const expected = [...groups.entries()]
      .sort(([x], [y]) => x - y)
      .map(([n, ids]) => {
        const vals = (f: string) => ids.map((id) => hand.get(id)![f]).filter((v): v is number => typeof v === 'number');
        const lo = vals('lo');
        const hi = vals('hi');
        return {
          key: { n },
          values: [
            ids.length,
            vals('s').reduce((x, y) => x + y, 0),
            lo.length ? Math.min(...lo) : null,
            hi.length ? Math.max(...hi) : null,
          ],
        };
      });
    expect(answer.body.groups).toEqual(expected);
  });

  it('a list filter naming a rollup is refused; a CSV export leaves rollups out', async () => {
    const { w } = await populated();
    const listed = await call('GET', `/workspaces/${w.workspaceId}/records?objectId=${w.account.id}&field.n=2`, {
      key: w.key,
    });
    expect(listed.status).toBe(422);
    expect(listed.body.errors[0]).toMatchObject({ code: 'not_filterable' });
    const res = await download(
      w.key,
      `/workspaces/${w.workspaceId}/records/export?objectId=${w.account.id}&format=csv`,
    );
    expect(res.status).toBe(200);
    const csv = new TextDecoder().decode(await res.arrayBuffer());
    const header = csv.split(/\r?\n/)[0]!.split(',');
    for (const spec of SPECS) expect(header).not.toContain(spec.name);
  });

  it('a role hiding a rollup: absent from reads; a filter, sort or measure naming it is an unknown field', async () => {
    const { w, accounts } = await populated();
    const role = await admin('POST', '/admin/roles', {
      name: `hides-s-${w.account.id}`,
      objects: [
        { objectId: w.account.id, read: true, fields: { s: 'hidden', lo: 'hidden' } },
        { objectId: w.order.id, read: true },
      ],
    });
    expect(role.status, JSON.stringify(role.body)).toBe(201);
    const member = await newUser('member');
    await admin('PUT', `/admin/workspaces/${w.workspaceId}/members/${member.id}`, { roleId: role.body.id });
    const read = await call('GET', `/records/${accounts[2]}`, { key: member.key });
    expect(read.status).toBe(200);
    expect(Object.keys(valuesOf(read.body))).not.toContain('s');
    expect(Object.keys(valuesOf(read.body))).toContain('n');
    const q = await queryRecords(member.key, w.workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: w.account.id },
      sort: [{ field: 'n', direction: 'desc' }],
      limit: 100,
    });
    for (const item of q.body.items) {
      expect(Object.keys(valuesOf(item))).not.toContain('s');
      expect(Object.keys(valuesOf(item))).not.toContain('lo');
    }
    const same = async (make: (name: string) => Promise<{ status: number; body: any }>) => {
      const hidden = await make('s');
      const missing = await make('zz');
      expect(hidden.status).toBe(missing.status);
      expect(JSON.stringify(hidden.body).replaceAll('"s"', '"zz"').replaceAll('field.s', 'field.zz')).toEqual(
        JSON.stringify(missing.body),
      );
    };
    await same((f) => queryRecords(member.key, w.workspaceId, { filter: { field: f, op: 'gt', value: 0 } }));
    await same((f) => queryRecords(member.key, w.workspaceId, { sort: [{ field: f }] }));
    await same((f) =>
      call('POST', `/workspaces/${w.workspaceId}/records/aggregate`, {
        key: member.key,
        body: { objectId: w.account.id, measures: [{ op: 'sum', field: f }] },
      }),
    );
    await same((f) => call('GET', `/workspaces/${w.workspaceId}/records?field.${f}=1`, { key: member.key }));
    await same((f) => queryRecords(member.key, w.workspaceId, { fields: [f] }));
    await same((f) =>
      call('POST', `/workspaces/${w.workspaceId}/records/aggregate`, {
        key: member.key,
        body: { objectId: w.account.id, groupBy: [{ field: f }], measures: [{ op: 'count' }] },
      }),
    );
    await same((f) =>
      call('GET', `/workspaces/${w.workspaceId}/records/export?objectId=${w.account.id}&format=csv&fields=${f}`, {
        key: member.key,
      }).catch(() => ({ status: 0, body: null })),
    );
  });

  // Two fields of one name and one type are no conflict when one is a rollup: a rollup on Account must not
  // break queries naming Order's own `amount` in the workspace (400 ambiguous_field).
  it('a rollup named like a number field of another object in the workspace leaves that field queryable', async () => {
    const w = await world([]);
    await w.newOrder({ amount: 3 });
    const before = await queryRecords(w.key, w.workspaceId, { filter: { field: 'amount', op: 'gt', value: 1 } });
    expect(before.status).toBe(200);
    expect(before.body.items.length).toBe(1);
    expect(
      (await w.defineAccount([rollupDef({ name: 'amount', field: 'account', op: 'sum', of: 'amount' }, w.order.id)]))
        .status,
    ).toBe(200);
    const after = await queryRecords(w.key, w.workspaceId, { filter: { field: 'amount', op: 'gt', value: 1 } });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body.items.length).toBe(1);
  });
});

describe('rollup attacks: concurrency and moves', () => {
  it('many concurrent creates, moves between two targets, deletes and restores stay exact', async () => {
    const w = await world();
    const [a, b] = [await w.newAccount('A'), await w.newAccount('B')];
    const made = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        w.newOrder({ account: i % 2 ? a : b, amount: i - 10, qty: i, accounts: [a, b] }),
      ),
    );
    const ids = made.map((m) => m.id);
    const writes = ids.flatMap((id, i) => [
      call('PATCH', `/workspaces/${w.workspaceId}/records/${id}`, {
        key: w.key,
        body: {
          fieldValues: [
            fv('account', i % 2 ? b : a),
            fv('amount', i % 5 === 0 ? null : 100 - i),
            fv('accounts', [i % 3 ? a : b]),
          ],
        },
      }),
      ...(i % 4 === 0 ? [call('DELETE', `/workspaces/${w.workspaceId}/records/${id}`, { key: w.key })] : []),
      ...(i % 6 === 0 ? [w.newOrder({ account: a, amount: i, accounts: [b] })] : []),
    ]);
    const results = await Promise.all(writes);
    // A patch may lose to a delete of the same record (a conflict): the hand count reads what is stored.
    for (const r of results) if ('status' in r) expect([200, 404, 409, 412]).toContain(r.status);
    await Promise.all(
      ids
        .filter((_, i) => i % 8 === 0)
        .map((id) => call('POST', `/workspaces/${w.workspaceId}/records/${id}/restore`, { key: w.key })),
    );
    await expectExact(w, [a, b]);
  });

  it('a tenant moved while its referencing records are written keeps exact rollups on its new database', async () => {
    const tenant = await movingTenant('DB_2', 'Rollups');
    const as = (method: string, path: string, body?: unknown) =>
      call(method, path, { key: tenant.adminKey, ...(body === undefined ? {} : { body }) });
    const specs: RollupSpec[] = [
      { name: 'people', field: 'company', op: 'count' },
      { name: 'best', field: 'company', op: 'max', of: 'score' },
      { name: 'total', field: 'company', op: 'sum', of: 'score' },
    ];
    const defined = await as('PUT', `/admin/objects/${tenant.companyObjectId}`, {
      name: 'Company',
      workspaceIds: [tenant.workspaceId],
      nameTemplate: '{title}',
      fields: [
        { name: 'title', type: 'text' },
        ...specs.map((s) => ({
          ...rollupDef(s, tenant.objectId),
          from: { objectId: tenant.objectId, field: s.field },
        })),
      ],
    });
    expect(defined.status, JSON.stringify(defined.body)).toBe(200);
    const company = async (title: string) =>
      (await createOne(tenant.key, tenant.companyObjectId, [fv('title', title)])).id as number;
    const [x, y] = [await company('X'), await company('Y')];
    const people: number[] = [];
    const person = async (i: number, at: number) =>
      people.push(
        (await createOne(tenant.key, tenant.objectId, [fv('firstName', `P${i}`), fv('company', at), fv('score', i)]))
          .id,
      );
    for (let i = 0; i < 6; i++) await person(i, i % 2 ? x : y);
    await mover(tenant.id).hold();
    const started = await call('POST', `/tenants/${tenant.id}/move`, {
      key: 'test-admin-token',
      body: { database: 'DB_3' },
    });
    expect(started.status).toBe(202);
    const patch = (id: number, values: unknown[]) =>
      call('PATCH', `/workspaces/${tenant.workspaceId}/records/${id}`, {
        key: tenant.key,
        body: { fieldValues: values },
      });
    // Writes between the copy's steps: moves, a greatest leaving, a delete, creates.
    let step = 0;
    await stepMove(tenant.id, started.body.id, (move) => {
      step += 1;
      return move.status !== 'copying' || step > 3;
    });
    expect((await patch(people[5]!, [fv('company', y)])).status).toBe(200);
    expect((await patch(people[4]!, [fv('score', 40)])).status).toBe(200);
    await person(7, x);
    step = 0;
    await stepMove(tenant.id, started.body.id, (move) => {
      step += 1;
      return move.status !== 'copying' || step > 3;
    });
    expect(
      (await call('DELETE', `/workspaces/${tenant.workspaceId}/records/${people[4]}`, { key: tenant.key })).status,
    ).toBe(200);
    await person(8, y);
    const done = await stepMove(tenant.id, started.body.id);
    expect(done.status).toBe('succeeded');
    const check = async () => {
      const records = await liveValues(tenant.objectId, database('DB_3'));
      for (const id of [x, y]) {
        const { values, version } = await shown(tenant.key, id, specs);
        expect(values, `company ${id}`).toEqual(byHand(records, id, specs));
        expect(version).toBe(1);
      }
    };
    await check();
    const left = await database('DB_2')
      .prepare('SELECT count(*) AS n FROM record_index WHERE role = 4 AND object_id = ?')
      .bind(tenant.companyObjectId)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
    // Writes on the new database keep them.
    expect((await patch(people[0]!, [fv('company', x), fv('score', -9)])).status).toBe(200);
    await person(9, y);
    await check();
    const sorted = await queryRecords(tenant.key, tenant.workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: tenant.companyObjectId },
      sort: [{ field: 'people', direction: 'desc' }],
    });
    const hand = await liveValues(tenant.objectId, database('DB_3'));
    const counts = [x, y].map((id) => [id, byHand(hand, id, specs).people as number] as const);
    expect(sorted.body.items.map((r: any) => [r.id, valuesOf(r).people])).toEqual(
      [...counts].sort((p, q) => q[1] - p[1] || q[0] - p[0]),
    );
  });
});

describe('rollup attacks: operators, targets deleted, cost', () => {
  it('every operator, several sort keys and a deleted target written around agree with a hand count', async () => {
    const w = await world();
    const accounts: number[] = [];
    for (let i = 0; i < 7; i++) accounts.push(await w.newAccount(`T${i}`));
    const orders: number[] = [];
    for (let i = 0; i < 14; i++)
      orders.push(
        (await w.newOrder({ account: accounts[i % 5]!, ...(i % 3 ? { amount: (i % 4) - 1 } : {}), qty: i % 2 })).id,
      );
    // A target deleted, then orders moved out of it and one deleted; then restored.
    await w.remove(accounts[1]!);
    await w.patch(orders[1]!, { account: accounts[2]! });
    await w.remove(orders[6]!);
    await w.restore(accounts[1]!);
    // The target's own delete and restore made its versions 2 and 3; nothing else did.
    await expectExact(w, accounts, SPECS, { [accounts[1]!]: 3 });
    const records = await liveValues(w.order.id);
    const hand = new Map(accounts.map((id) => [id, byHand(records, id, SPECS)]));
    const conditions: [unknown, (v: Record<string, unknown>) => boolean][] = [
      [{ field: 'lo', op: 'exists', value: false }, (v) => v.lo === undefined],
      [{ field: 'lo', op: 'exists', value: true }, (v) => v.lo !== undefined],
      [{ field: 'n', op: 'ne', value: 3 }, (v) => v.n !== 3],
      [{ field: 'n', op: 'in', value: [0, 2] }, (v) => [0, 2].includes(v.n as number)],
      [{ field: 'av', op: 'nin', value: [0] }, (v) => v.av !== 0],
      [{ field: 's', op: 'eq', value: 0 }, (v) => v.s === 0],
      [{ not: { field: 'hi', op: 'lte', value: 0 } }, (v) => !(v.hi !== undefined && (v.hi as number) <= 0)],
      [{ field: 'av', op: 'lt', value: 0.5 }, (v) => v.av !== undefined && (v.av as number) < 0.5],
    ];
    for (const [condition, pick] of conditions) {
      const answer = await queryRecords(w.key, w.workspaceId, {
        filter: { and: [{ field: 'objectId', op: 'eq', value: w.account.id }, condition] },
        limit: 100,
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(
        answer.body.items.map((r: any) => r.id).sort((x: number, y: number) => x - y),
        JSON.stringify(condition),
      ).toEqual(accounts.filter((id) => pick(hand.get(id)!)));
    }
    const sorted = await walkQuery(w.key, w.workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: w.account.id },
      sort: [
        { field: 'hi', direction: 'desc' },
        { field: 's', direction: 'asc' },
      ],
      limit: 3,
    });
    const key = (id: number) => hand.get(id)!;
    const cmp = (x: unknown, y: unknown, desc: boolean) =>
      x === y
        ? 0
        : x === undefined
          ? 1
          : y === undefined
            ? -1
            : ((x as number) < (y as number) ? -1 : 1) * (desc ? -1 : 1);
    expect(sorted.ids).toEqual(
      // Ties broken by id, in the first key's direction.
      [...accounts].sort((x, y) => cmp(key(x).hi, key(y).hi, true) || cmp(key(x).s, key(y).s, false) || y - x),
    );
  });

  it('reading rollups costs no round trip; sorts and filters read about what an indexed field does', async () => {
    const w = await world([]);
    const N = 1500;
    expect((await w.defineAccount([], [{ name: 'rank', type: 'integer', indexed: true }])).status).toBe(200);
    await bulkRecords(
      w.account.id,
      w.workspaceId,
      N,
      `json_array(json_object('fieldName', 'title', 'value', 'Bulk ' || i),
        json_object('fieldName', 'rank', 'value', CASE WHEN i > ${N - 3} THEN 1000 + i ELSE i % 7 END))`,
      `'Bulk ' || i`,
      w.editor.id,
    );
    const plain = await queryRecords(w.key, w.workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: w.account.id },
      sort: [{ field: 'rank', direction: 'desc' }],
      limit: 3,
    });
    const few = plain.body.items.map((r: any) => r.id as number).reverse();
    for (const [i, id] of few.entries()) for (let k = 0; k <= i; k++) await w.newOrder({ account: id, amount: k + 1 });
    const readPlain = await call('GET', `/records/${few[0]}`, { key: w.key });
    const defined = await w.defineAccount(
      SPECS.map((s) => rollupDef(s, w.order.id)),
      [{ name: 'rank', type: 'integer', indexed: true }],
    );
    expect(defined.status).toBe(200);
    const readRolled = await call('GET', `/records/${few[0]}`, { key: w.key });
    expect(valuesOf(readRolled.body).n).toBe(1);
    expect(roundTrips(readRolled)).toBe(roundTrips(readPlain));
    const q = (body: Record<string, unknown>) => queryRecords(w.key, w.workspaceId, body);
    const all = { field: 'objectId', op: 'eq', value: w.account.id };
    const byRank = await q({ filter: all, sort: [{ field: 'rank', direction: 'desc' }], limit: 3 });
    const byCount = await q({ filter: all, sort: [{ field: 'n', direction: 'desc' }], limit: 3 });
    expect(roundTrips(byCount)).toBeLessThanOrEqual(roundTrips(byRank));
    expect(byCount.body.items.map((r: any) => r.id)).toEqual([...few].reverse());
    const rankRange = await q({ filter: { field: 'rank', op: 'gte', value: 1000 } });
    const sumRange = await q({ filter: { field: 's', op: 'gte', value: 1 } });
    expect(sumRange.body.items.map((r: any) => r.id).sort()).toEqual([...few].sort());
    const rankEq = await q({ filter: { field: 'rank', op: 'eq', value: 1000 + N } });
    const countEq = await q({ filter: { field: 'n', op: 'eq', value: 3 } });
    expect(countEq.body.items.map((r: any) => r.id)).toEqual([few[2]]);
    const rows = {
      sort: [rowsRead(byRank), rowsRead(byCount)],
      range: [rowsRead(rankRange), rowsRead(sumRange)],
      eq: [rowsRead(rankEq), rowsRead(countEq)],
    };
    // As an indexed integer field does, within a factor of two.
    expect(
      Object.fromEntries(Object.entries(rows).map(([k, [indexed, rollup]]) => [k, rollup! <= 2 * indexed! + 20])),
      JSON.stringify(rows),
    ).toEqual({ sort: true, range: true, eq: true });
  });
});

describe('rollup attacks: writes naming a rollup', () => {
  it('every write naming a rollup is refused or ignores it, and nothing is stored under its name', async () => {
    const w = await world();
    const a = await w.newAccount('A');
    await w.newOrder({ account: a, amount: 2 });
    const created = await call('POST', '/records/batch', {
      key: w.key,
      body: [{ objectId: w.account.id, fieldValues: [fv('title', 'B'), fv('n', 7)] }],
    });
    expect(created.status).toBe(422);
    expect(created.body.errors[0]).toMatchObject({ code: 'read_only_field' });
    const batch = await call('PATCH', '/records/batch', { key: w.key, body: [{ id: a, fieldValues: [fv('s', 1)] }] });
    expect(batch.status).toBe(422);
    expect(batch.body.errors[0]).toMatchObject({ code: 'read_only_field' });
    const nulled = await call('PATCH', `/workspaces/${w.workspaceId}/records/${a}`, {
      key: w.key,
      body: { fieldValues: [fv('lo', null)] },
    });
    expect(nulled.status).toBe(422);
    // A CSV import into the accounts with a column named like a rollup: the column is ignored (or the rows fail).
    const csv = `id,title,n,s\r\n${a},A2,99,99\r\n`;
    const imported = await upload(w.key, w.workspaceId, `objectId=${w.account.id}&mode=update`, csv, 'text/csv');
    if (imported.status === 202) await finished(w.key, imported.body.id);
    const row = await env.DB.prepare('SELECT field_values FROM records WHERE id = ?')
      .bind(a)
      .first<{ field_values: string }>();
    const stored = (JSON.parse(row!.field_values) as { fieldName: string }[]).map((e) => e.fieldName);
    expect(stored).not.toContain('n');
    expect(stored).not.toContain('s');
    const { values } = await shown(w.key, a, SPECS);
    expect(values).toMatchObject({ n: 1, s: 2 });
    // A formula or a lookup cannot read a rollup.
    const formula = await w.defineAccount(
      SPECS.map((s) => rollupDef(s, w.order.id)),
      [{ name: 'twice', type: 'formula', expression: 'n * 2', resultType: 'number' }],
    );
    expect(formula.status).toBe(422);
    const lookup = await admin('PUT', `/admin/objects/${w.order.id}`, {
      name: 'Order',
      workspaceIds: [w.workspaceId],
      fields: [...ORDER_FIELDS(w.account.id), { name: 'accountN', type: 'lookup', reference: 'account', field: 'n' }],
    });
    expect(lookup.status).toBe(422);
  });
});

describe('rollup attacks: definitions racing writes, tenants', () => {
  it('a rollup defined, changed and defined again while referencing records are written stays exact', async () => {
    const w = await world([]);
    const [a, b] = [await w.newAccount('A'), await w.newAccount('B')];
    const made = await Promise.all(
      Array.from({ length: 12 }, (_, i) => w.newOrder({ account: i % 2 ? a : b, amount: i + 0.5, accounts: [a] })),
    );
    const changed = SPECS.map((s) => (s.op === 'min' ? { ...s, op: 'max' as const } : s));
    const writes = made.flatMap((o, i) => [
      call('PATCH', `/workspaces/${w.workspaceId}/records/${o.id}`, {
        key: w.key,
        body: { fieldValues: [fv('account', i % 3 ? a : b), fv('amount', 3 * i - 7), fv('accounts', [b])] },
      }),
      w.newOrder({ account: a, amount: -i }),
    ]);
    const defs = [
      w.defineAccount(SPECS.map((s) => rollupDef(s, w.order.id))),
      w.defineAccount(changed.map((s) => rollupDef(s, w.order.id))),
      w.defineAccount(SPECS.map((s) => rollupDef(s, w.order.id))),
    ];
    const answers = await Promise.all([...defs, ...writes]);
    for (const answer of answers.slice(0, 3)) expect([200, 409, 412]).toContain((answer as { status: number }).status);
    const current = (await admin('GET', `/admin/objects/${w.account.id}`)).body.fields.filter(
      (f: any) => f.type === 'rollup',
    );
    const specs: RollupSpec[] = current.map((f: any) => ({ name: f.name, field: f.from.field, op: f.op, of: f.of }));
    expect(specs.length).toBe(SPECS.length);
    await expectExact(w, [a, b], specs);
  });

  it("a tenant's rollup cannot read another tenant's object", async () => {
    const w = await world([]);
    const tenant = await movingTenant('DB_2', 'Other');
    const answer = await call('PUT', `/admin/objects/${tenant.companyObjectId}`, {
      key: tenant.adminKey,
      body: {
        name: 'Company',
        workspaceIds: [tenant.workspaceId],
        nameTemplate: '{title}',
        fields: [
          { name: 'title', type: 'text' },
          { name: 'x', type: 'rollup', from: { objectId: w.order.id, field: 'account' }, op: 'count' },
        ],
      },
    });
    const missing = await call('PUT', `/admin/objects/${tenant.companyObjectId}`, {
      key: tenant.adminKey,
      body: {
        name: 'Company',
        workspaceIds: [tenant.workspaceId],
        nameTemplate: '{title}',
        fields: [
          { name: 'title', type: 'text' },
          { name: 'x', type: 'rollup', from: { objectId: 987654321, field: 'account' }, op: 'count' },
        ],
      },
    });
    expect(answer.status).toBe(missing.status);
    expect(answer.body.errors).toEqual(missing.body.errors);
  });
});

describe('rollup attacks: values kept from before a type change', () => {
  // `->>` reads a kept JSON true/false as 1/0, which typeof() calls a number: rollups and aggregates read
  // JSON numbers only.
  it('a field that held booleans or texts before it became a number adds up only the numbers it holds', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const account = (
      await admin('POST', '/admin/objects', {
        name: 'Account',
        workspaceIds: [workspaceId],
        fields: [{ name: 'title', type: 'text' }],
      })
    ).body;
    const fields = (flag: string, label: string) => [
      { name: 'account', type: 'reference', target: account.id, onDelete: 'keep' },
      { name: 'flag', type: flag },
      { name: 'label', type: label },
    ];
    const order = (
      await admin('POST', '/admin/objects', {
        name: 'Order',
        workspaceIds: [workspaceId],
        fields: fields('boolean', 'text'),
      })
    ).body;
    const a = (await createOne(editor.key, account.id, [fv('title', 'A')])).id;
    await createOne(editor.key, order.id, [fv('account', a), fv('flag', true), fv('label', '12')]);
    await createOne(editor.key, order.id, [fv('account', a), fv('flag', false), fv('label', '3')]);
    const retyped = await admin('PUT', `/admin/objects/${order.id}`, {
      name: 'Order',
      workspaceIds: [workspaceId],
      fields: fields('number', 'number'),
    });
    expect(retyped.status, JSON.stringify(retyped.body)).toBe(200);
    await createOne(editor.key, order.id, [fv('account', a), fv('flag', 5), fv('label', 7)]);
    const defined = await admin('PUT', `/admin/objects/${account.id}`, {
      name: 'Account',
      workspaceIds: [workspaceId],
      fields: [
        { name: 'title', type: 'text' },
        { name: 'flags', type: 'rollup', from: { objectId: order.id, field: 'account' }, op: 'sum', of: 'flag' },
        { name: 'flagAvg', type: 'rollup', from: { objectId: order.id, field: 'account' }, op: 'avg', of: 'flag' },
        { name: 'labels', type: 'rollup', from: { objectId: order.id, field: 'account' }, op: 'sum', of: 'label' },
      ],
    });
    expect(defined.status, JSON.stringify(defined.body)).toBe(200);
    const values = valuesOf((await call('GET', `/records/${a}`, { key: editor.key })).body);
    const aggregate = await call('POST', `/workspaces/${workspaceId}/records/aggregate`, {
      key: editor.key,
      body: {
        objectId: order.id,
        measures: [
          { op: 'sum', field: 'flag' },
          { op: 'sum', field: 'label' },
        ],
      },
    });
    // The orders hold true, false and 5 in flag: only 5 is a number. The aggregate says the same.
    expect({
      rollup: [values.flags, values.flagAvg, values.labels],
      aggregate: aggregate.body.groups[0].values,
    }).toEqual({
      rollup: [5, 5, 7],
      aggregate: [5, 7],
    });
  });
});
