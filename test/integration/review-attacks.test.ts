import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { database, mover, movingTenant, stepMove } from './moving.ts';
import { byHand, liveValues, rollupDef, type RollupSpec } from './rollup-counts.ts';
import {
  admin,
  call,
  createOne,
  fillKeys,
  fv,
  indexBuilder,
  newUser,
  newWorkspace,
  queryRecords,
  rowsRead,
  untilIndexBuilt,
  valuesOf,
} from './helpers.ts';

/**
 * A reviewer's attacks on the background computation of rollups (racing writes, definitions,
 * restarts, moves) and on the fallback that lets SQL order one object's records for a sort.
 */

/** Every target's rollups as a reader sees them, against the hand count; no target gets a new version. */
async function expectExact(
  key: string,
  sourceObject: number,
  targets: number[],
  specs: RollupSpec[],
  db: D1Database = env.DB,
  versions: Record<number, number> = {},
): Promise<void> {
  const records = await liveValues(sourceObject, db);
  const names = new Set(specs.map((s) => s.name));
  const wrong: string[] = [];
  for (const target of targets) {
    const read = await call('GET', `/records/${target}`, { key });
    expect(read.status).toBe(200);
    const values = Object.fromEntries(Object.entries(valuesOf(read.body)).filter(([k]) => names.has(k)));
    const want = byHand(records, target, specs);
    if (JSON.stringify(values, Object.keys(want).sort()) !== JSON.stringify(want, Object.keys(want).sort()))
      wrong.push(`${target}: shown ${JSON.stringify(values)}, by hand ${JSON.stringify(want)}`);
    else if (Object.keys(values).length !== Object.keys(want).length)
      wrong.push(`${target}: shown ${JSON.stringify(values)}, by hand ${JSON.stringify(want)}`);
    expect(read.body.version, `version of ${target}`).toBe(versions[target] ?? read.body.version);
  }
  expect(wrong).toEqual([]);
}

async function rollupWorld() {
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
  const order = (
    await admin('POST', '/admin/objects', {
      name: 'Order',
      workspaceIds: [workspaceId],
      fields: [
        { name: 'account', type: 'reference', target: account.id, onDelete: 'keep' },
        { name: 'amount', type: 'number' },
        { name: 'qty', type: 'integer' },
      ],
    })
  ).body;
  expect(order.id).toBeTypeOf('number');
  const key = editor.key;
  const define = (rollups: unknown[], extra: unknown[] = []) =>
    admin('PUT', `/admin/objects/${account.id}`, {
      name: 'Account',
      workspaceIds: [workspaceId],
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }, ...extra, ...rollups],
    });
  const accounts = async (n: number, prefix = 'A') => {
    const ids: number[] = [];
    for (let start = 0; start < n; start += 20) {
      const made = await call('POST', '/records/batch', {
        key,
        body: Array.from({ length: Math.min(20, n - start) }, (_, i) => ({
          objectId: account.id,
          fieldValues: [fv('title', `${prefix}${String(start + i).padStart(4, '0')}`)],
        })),
      });
      expect(made.status).toBe(201);
      ids.push(...made.body.map((item: any) => item.record.id as number));
    }
    return ids;
  };
  const newOrder = async (values: Record<string, unknown>) =>
    (
      await createOne(
        key,
        order.id,
        Object.entries(values).map(([k, v]) => fv(k, v)),
      )
    ).id as number;
  const patch = async (id: number, values: Record<string, unknown>) => {
    const answer = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
      key,
      body: { fieldValues: Object.entries(values).map(([k, v]) => fv(k, v)) },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  };
  const remove = async (id: number) =>
    expect((await call('DELETE', `/workspaces/${workspaceId}/records/${id}`, { key })).status).toBe(200);
  const restore = async (id: number) =>
    expect((await call('POST', `/workspaces/${workspaceId}/records/${id}/restore`, { key })).status).toBe(200);
  const computing = async () => (await admin('GET', `/admin/objects/${account.id}`)).body.computing;
  return { editor, key, workspaceId, account, order, define, accounts, newOrder, patch, remove, restore, computing };
}

const roleFourRows = async (objectId: number, db: D1Database = env.DB) =>
  (
    await db
      .prepare('SELECT record_id, field, value, n, total FROM record_index WHERE object_id = ? AND role = 4')
      .bind(objectId)
      .all<{ record_id: number; field: string; value: unknown; n: number; total: unknown }>()
  ).results;

describe('review: rollups computed in the background, racing writes', () => {
  it('an op changed, a rollup removed and writes of every kind between the steps end exact', async () => {
    const w = await rollupWorld();
    const builder = indexBuilder(w.account.id);
    await builder.hold();
    const ids = await w.accounts(250);
    // Orders on early (reached by the first step) and late (not reached) accounts.
    const early = ids.slice(0, 5);
    const late = ids.slice(200, 205);
    const orders: number[] = [];
    for (const [i, target] of [...early, ...late].entries())
      orders.push(await w.newOrder({ account: target, amount: i + 0.5, qty: i }));
    const first: RollupSpec[] = [
      { name: 'orders', op: 'count' },
      { name: 'revenue', op: 'sum', of: 'amount' },
      { name: 'lo', op: 'min', of: 'amount' },
      { name: 'hi', op: 'max', of: 'qty' },
    ];
    expect((await w.define(first.map((s) => rollupDef(s, w.order.id)))).status).toBe(200);
    expect(await w.computing()).toEqual({ rollups: { afterRecordId: -1 } });
    expect(await builder.stepOnce(w.account.id)).toBe(true);
    expect(await w.computing()).toEqual({ rollups: { afterRecordId: ids[99] } });

    // Writes between the steps: creates on reached and unreached targets, a move from a reached
    // target to an unreached one and back, a number patched away, a delete and a restore.
    orders.push(await w.newOrder({ account: early[0], amount: 100, qty: 50 }));
    orders.push(await w.newOrder({ account: late[0], amount: -3, qty: 2 }));
    await w.patch(orders[1]!, { account: late[1] });
    await w.patch(orders[6]!, { account: early[1] });
    await w.patch(orders[2]!, { amount: null });
    await w.remove(orders[3]!);
    await w.remove(orders[7]!);
    await w.restore(orders[7]!);
    // A target deleted while orders reference it (keep), another created past the build's position.
    await w.remove(early[4]!);
    const [fresh] = await w.accounts(1, 'F');
    orders.push(await w.newOrder({ account: fresh, amount: 7.25, qty: 9 }));

    // The definition changes mid-build: `orders` becomes a sum, `lo` a greatest, `hi` goes.
    const second: RollupSpec[] = [
      { name: 'orders', op: 'sum', of: 'qty' },
      { name: 'revenue', op: 'sum', of: 'amount' },
      { name: 'lo', op: 'max', of: 'amount' },
    ];
    expect((await w.define(second.map((s) => rollupDef(s, w.order.id)))).status).toBe(200);
    expect(await w.computing()).toEqual({ rollups: { afterRecordId: -1 } });
    orders.push(await w.newOrder({ account: late[2], amount: 1.5, qty: 4 }));
    orders.push(await w.newOrder({ account: early[2], amount: 2.5, qty: 6 }));
    await w.patch(orders[0]!, { amount: 0.25 });
    expect(await builder.stepOnce(w.account.id)).toBe(true);
    // Writes again, between the second build's steps.
    await w.restore(orders[3]!);
    await w.patch(orders[8]!, { account: early[3], amount: 99 });
    await w.restore(early[4]!);
    orders.push(await w.newOrder({ account: fresh, qty: 1 }));
    // A restart loses what the builder held in memory: the position lives in D1.
    await builder.restart().catch(() => undefined);
    for (let i = 0; i < 10 && (await indexBuilder(w.account.id).stepOnce(w.account.id)); i++);
    expect(await w.computing()).toBeUndefined();
    await expectExact(w.key, w.order.id, [...early, ...late, fresh!, ids[150]!], second);
    // No row is left of the rollup taken out.
    expect((await roleFourRows(w.account.id)).filter((r) => r.field === 'hi')).toEqual([]);
    await indexBuilder(w.account.id).release(w.account.id);
  });

  it('a rollup removed mid-build: hidden at once, its rows gone when the build ends, the others exact', async () => {
    const w = await rollupWorld();
    const builder = indexBuilder(w.account.id);
    const ids = await w.accounts(220);
    for (const [i, target] of ids.entries()) if (i % 10 === 0) await w.newOrder({ account: target, amount: i });
    await builder.hold();
    const specs: RollupSpec[] = [
      { name: 'orders', op: 'count' },
      { name: 'revenue', op: 'sum', of: 'amount' },
    ];
    expect((await w.define(specs.map((s) => rollupDef(s, w.order.id)))).status).toBe(200);
    expect(await builder.stepOnce(w.account.id)).toBe(true);
    // Taken out after one chunk of a hundred.
    expect((await w.define([rollupDef(specs[1]!, w.order.id)])).status).toBe(200);
    expect(await w.computing()).toEqual({ rollups: { afterRecordId: -1 } });
    const read = await call('GET', `/records/${ids[0]}`, { key: w.key });
    expect(Object.keys(valuesOf(read.body))).not.toContain('orders');
    for (let i = 0; i < 10 && (await builder.stepOnce(w.account.id)); i++);
    expect(await w.computing()).toBeUndefined();
    expect((await roleFourRows(w.account.id)).filter((r) => r.field === 'orders')).toEqual([]);
    await expectExact(w.key, w.order.id, ids.slice(0, 30), [specs[1]!]);
    await builder.release(w.account.id);
  });

  it('computing shows both formulas and rollups while both are due, and rollups leave it when done', async () => {
    const w = await rollupWorld();
    const builder = indexBuilder(w.account.id);
    const ids = await w.accounts(3);
    await w.newOrder({ account: ids[0], amount: 2 });
    await builder.hold();
    const defined = await w.define(
      [rollupDef({ name: 'orders', op: 'count' }, w.order.id)],
      [{ name: 'shout', type: 'formula', expression: 'UPPER(title)', resultType: 'text' }],
    );
    expect(defined.status, JSON.stringify(defined.body)).toBe(200);
    expect(await w.computing()).toEqual({ formulas: { afterRecordId: -1 }, rollups: { afterRecordId: -1 } });
    for (let i = 0; i < 3; i++) await builder.stepOnce(w.account.id);
    // The rollups are done; the formulas wait for their settling pass (SETTLE_MS), by design.
    expect(await w.computing()).toEqual({ formulas: expect.any(Object) });
    const read = valuesOf((await call('GET', `/records/${ids[0]}`, { key: w.key })).body);
    expect(read).toMatchObject({ orders: 1 });
    await builder.release(w.account.id);
  });
});

describe('review: a tenant moved while its rollups are computed', () => {
  it('the build goes on across the copy and ends exact on the new database', async () => {
    const tenant = await movingTenant('DB_2', 'RollupBuild');
    const as = (method: string, path: string, body?: unknown) =>
      call(method, path, { key: tenant.adminKey, ...(body === undefined ? {} : { body }) });
    const companies: number[] = [];
    for (let start = 0; start < 160; start += 20) {
      const made = await call('POST', '/records/batch', {
        key: tenant.key,
        body: Array.from({ length: 20 }, (_, i) => ({
          objectId: tenant.companyObjectId,
          fieldValues: [fv('title', `C${start + i}`)],
        })),
      });
      expect(made.status).toBe(201);
      companies.push(...made.body.map((item: any) => item.record.id as number));
    }
    const people: number[] = [];
    const person = async (i: number, at: number) => {
      const made = await createOne(tenant.key, tenant.objectId, [
        fv('firstName', `P${i}`),
        fv('company', at),
        fv('score', i),
      ]);
      people.push(made.id);
    };
    for (let i = 0; i < 8; i++) await person(i, companies[i % 2 ? 3 : 130]!);
    const builder = indexBuilder(tenant.companyObjectId);
    await builder.hold();
    const specs: RollupSpec[] = [
      { name: 'people', op: 'count', field: 'company' },
      { name: 'best', op: 'max', of: 'score', field: 'company' },
      { name: 'total', op: 'sum', of: 'score', field: 'company' },
    ];
    const defined = await as('PUT', `/admin/objects/${tenant.companyObjectId}`, {
      name: 'Company',
      workspaceIds: [tenant.workspaceId],
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }, ...specs.map((s) => rollupDef(s, tenant.objectId))],
    });
    expect(defined.status, JSON.stringify(defined.body)).toBe(200);
    expect(await builder.stepOnce(tenant.companyObjectId)).toBe(true);

    await mover(tenant.id).hold();
    const started = await call('POST', `/tenants/${tenant.id}/move`, {
      key: 'test-admin-token',
      body: { database: 'DB_3' },
    });
    expect(started.status).toBe(202);
    let step = 0;
    await stepMove(tenant.id, started.body.id, (move) => {
      step += 1;
      return move.status !== 'copying' || step > 4;
    });
    // Between the copy's steps: the build's next chunk on the old database, and writes.
    await builder.stepOnce(tenant.companyObjectId).catch(() => undefined);
    await person(20, companies[130]!);
    await person(21, companies[3]!);
    const patch = (id: number, values: unknown[]) =>
      call('PATCH', `/workspaces/${tenant.workspaceId}/records/${id}`, {
        key: tenant.key,
        body: { fieldValues: values },
      });
    expect((await patch(people[0]!, [fv('company', companies[3])])).status).toBe(200);
    const done = await stepMove(tenant.id, started.body.id);
    expect(done.status).toBe('succeeded');
    for (let i = 0; i < 10; i++) {
      const more = await builder.stepOnce(tenant.companyObjectId).catch(() => true);
      if (!more) break;
    }
    const computing = (await as('GET', `/admin/objects/${tenant.companyObjectId}`)).body.computing;
    expect(computing).toBeUndefined();
    await expectExact(
      tenant.key,
      tenant.objectId,
      [companies[3]!, companies[130]!, companies[50]!],
      specs,
      database('DB_3'),
    );
    await builder.release(tenant.companyObjectId);
  });
});

/**
 * `n` records of `objectId` shared with `workspaceId` in one statement (the triggers index them as
 * any write does); `values`, `name`, `created` and `owner` are SQL expressions of `i`. Then their keys.
 */
async function bulk(
  objectId: number,
  workspaceId: number,
  n: number,
  exprs: { values: string; name: string; created: string; owner?: string },
): Promise<void> {
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO records (id, object_id, object_version, name, field_values, creation_type, version, deleted,
         owned_by, created_at, created_by, updated_at, updated_by, is_template)
       WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2)
       SELECT (SELECT coalesce(max(id), 0) FROM records) + i, ?1, 1, ${exprs.name}, ${exprs.values},
         'User', 1, 0, ${exprs.owner ?? 'NULL'}, ${exprs.created}, 1, ${exprs.created}, 1, 0 FROM s`,
    ).bind(objectId, n),
    env.DB.prepare(
      `INSERT INTO record_workspaces (record_id, workspace_id)
       SELECT id, ?2 FROM records r
       WHERE r.object_id = ?1 AND NOT EXISTS (SELECT 1 FROM record_workspaces w WHERE w.record_id = r.id)`,
    ).bind(objectId, workspaceId),
  ]);
  await fillKeys();
}

/** Every page of a query: the ids, each page's size and rows read, and whether every page but the last was full. */
async function walk(
  key: string,
  workspaceId: number,
  body: Record<string, unknown>,
  between?: (page: number, items: any[]) => Promise<void>,
): Promise<{ ids: number[]; items: any[]; sizes: number[]; rows: number[]; counts: unknown[] }> {
  const items: any[] = [];
  const sizes: number[] = [];
  const rows: number[] = [];
  const counts: unknown[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 60; pages++) {
    const answer = await queryRecords(key, workspaceId, { ...body, ...(cursor === null ? {} : { cursor }) });
    if (answer.status !== 200) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`);
    items.push(...answer.body.items);
    sizes.push(answer.body.items.length);
    rows.push(answer.headers.get('Server-Timing')?.includes('rows;') ? rowsRead(answer) : -1);
    counts.push(answer.body.count);
    cursor = answer.body.nextCursor;
    if (between) await between(pages + 1, answer.body.items);
    if (cursor === null) break;
  }
  expect(cursor, 'the walk ended').toBeNull();
  return { ids: items.map((r) => r.id as number), items, sizes, rows, counts };
}

const FLIGHTS = 18_000;
const GATES = 1_500;
const DOCKS = 300;

describe('review: a sort of one object that other objects outnumber along the key (SQL orders it)', () => {
  let editor: { id: number; key: string };
  let member: { id: number; key: string };
  let workspaceId: number;
  let flight: number;
  let gate: number;
  let dock: number;

  beforeAll(async () => {
    editor = await newUser('editor');
    member = await newUser('member');
    workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const define = async (name: string) => {
      const made = await admin('POST', '/admin/objects', {
        name,
        workspaceIds: [workspaceId],
        nameTemplate: '{label}',
        fields: [
          { name: 'label', type: 'text' },
          { name: 'code', type: 'text', indexed: true },
        ],
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      return made.body.id as number;
    };
    flight = await define('Flight');
    gate = await define('Gate');
    dock = await define('Dock');
    const values = (label: string, code: string) =>
      `CASE WHEN ${code} IS NULL THEN json_array(json_object('fieldName', 'label', 'value', ${label}))
        ELSE json_array(json_object('fieldName', 'label', 'value', ${label}),
          json_object('fieldName', 'code', 'value', ${code})) END`;
    // Flights: half named before the gates and half after; half created before and half after;
    // a third coded before them, a third after, a third without a code (ids before the gates').
    const flightName = `CASE WHEN i <= 9000 THEN printf('Bulk %05d', i) ELSE printf('Zz %05d', i) END`;
    await bulk(flight, workspaceId, FLIGHTS, {
      name: flightName,
      values: values(
        flightName,
        `CASE WHEN i <= 6000 THEN printf('A%05d', i) WHEN i <= 12000 THEN printf('Z%05d', i) END`,
      ),
      created: 'CASE WHEN i <= 9000 THEN i ELSE 300000 + i END',
    });
    const gateName = `printf('Zulu %05d', i)`;
    await bulk(gate, workspaceId, GATES, {
      name: gateName,
      values: values(gateName, `CASE WHEN i % 7 <> 0 THEN printf('G%05d', i) END`),
      created: '100000 + i',
      owner: `CASE WHEN i % 3 = 0 THEN ${member.id} END`,
    });
    const dockName = `printf('Yankee %05d', i)`;
    await bulk(dock, workspaceId, DOCKS, {
      name: dockName,
      values: values(dockName, `printf('D%05d', i)`),
      created: '200000 + i',
    });
    const role = await admin('POST', '/admin/roles', {
      name: `own-gates-${gate}`,
      objects: [
        { objectId: gate, read: true, rows: 'own' },
        { objectId: flight, read: true },
        { objectId: dock, read: true },
      ],
    });
    expect(role.status, JSON.stringify(role.body)).toBe(201);
    const joined = await admin('PUT', `/admin/workspaces/${workspaceId}/members/${member.id}`, {
      roleId: role.body.id,
    });
    expect(joined.status, JSON.stringify(joined.body)).toBeLessThan(300);
  }, 300_000);

  /** The ids of the live records of `objects` (of `owner` only, if given) in the sort's order, by SQL. */
  async function expected(objects: number[], field: string, desc: boolean, owner?: number): Promise<number[]> {
    const column =
      field === 'name'
        ? 'name'
        : field === 'createdAt'
          ? 'created_at'
          : field === 'updatedAt'
            ? 'updated_at'
            : `(SELECT e.value ->> '$.value' FROM json_each(field_values) e
                WHERE e.value ->> '$.fieldName' = '${field}')`;
    const dir = desc ? 'DESC' : 'ASC';
    const rows = await env.DB.prepare(
      `SELECT id FROM (SELECT id, ${column} AS v FROM records
         WHERE object_id IN (SELECT value FROM json_each(?1)) AND deleted = 0
           AND (?2 IS NULL OR owned_by = ?2))
       ORDER BY v IS NULL, v ${dir}, id ${dir}`,
    )
      .bind(JSON.stringify(objects), owner ?? null)
      .all<{ id: number }>();
    return rows.results.map((r) => r.id);
  }

  const full = (sizes: number[], limit: number) => sizes.slice(0, -1).filter((n) => n !== limit);

  it('walks every sort of the gates in order, each once, every page full', async () => {
    const problems: string[] = [];
    for (const [field, desc] of [
      ['name', false],
      ['name', true],
      ['createdAt', false],
      ['createdAt', true],
      ['code', false],
      ['code', true],
    ] as const) {
      const body = {
        filter: { field: 'objectId', op: 'eq', value: gate },
        sort: [{ field, direction: desc ? 'desc' : 'asc' }],
        limit: 100,
      };
      const got = await walk(editor.key, workspaceId, body);
      const want = await expected([gate], field, desc);
      if (JSON.stringify(got.ids) !== JSON.stringify(want))
        problems.push(`${field} ${desc ? 'desc' : 'asc'}: ${got.ids.length} ids, not the ${want.length} in order`);
      if (full(got.sizes, 100).length > 0) problems.push(`${field} ${desc ? 'desc' : 'asc'}: pages ${got.sizes}`);
    }
    expect(problems).toEqual([]);
  });

  it('`in` of two objects, with a count, by name and by code descending (records without a code last)', async () => {
    for (const [field, desc] of [
      ['name', false],
      ['code', true],
      ['code', false],
    ] as const) {
      const body = {
        filter: { field: 'objectId', op: 'in', value: [gate, dock] },
        sort: [{ field, direction: desc ? 'desc' : 'asc' }],
        limit: 100,
        count: true,
      };
      const got = await walk(editor.key, workspaceId, body);
      expect(got.ids, `${field} ${desc}`).toEqual(await expected([gate, dock], field, desc));
      expect(full(got.sizes, 100), `${field} ${desc}: ${got.sizes}`).toEqual([]);
      for (const count of got.counts) expect(count).toEqual({ value: GATES + DOCKS, exact: true });
    }
  });

  it('a role that reads only its own gates: its gates only, in order, full pages', async () => {
    for (const [field, desc] of [
      ['name', false],
      ['code', false],
      ['createdAt', true],
    ] as const) {
      const body = {
        filter: { field: 'objectId', op: 'eq', value: gate },
        sort: [{ field, direction: desc ? 'desc' : 'asc' }],
        limit: 50,
        count: true,
      };
      const got = await walk(member.key, workspaceId, body);
      const want = await expected([gate], field, desc, member.id);
      expect(want.length).toBe(GATES / 3);
      expect(got.ids, `${field} ${desc}`).toEqual(want);
      expect(full(got.sizes, 50), `${field} ${desc}: ${got.sizes}`).toEqual([]);
      expect(got.counts[0]).toEqual({ value: GATES / 3, exact: true });
    }
  });

  it('a search sorted by creation time finds every gate once, in order, full pages', async () => {
    const got = await walk(editor.key, workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: gate },
      search: 'zulu',
      sort: [{ field: 'createdAt' }],
      limit: 100,
    });
    expect(got.ids).toEqual(await expected([gate], 'createdAt', false));
    expect(full(got.sizes, 100)).toEqual([]);
  });

  it('a filter naming `deleted`: every live gate once, in order (are pages full?)', async () => {
    const got = await walk(editor.key, workspaceId, {
      filter: {
        and: [
          { field: 'objectId', op: 'eq', value: gate },
          { field: 'deleted', op: 'eq', value: false },
        ],
      },
      sort: [{ field: 'name' }],
      limit: 100,
    });
    expect(got.ids).toEqual(await expected([gate], 'name', false));
    expect(full(got.sizes, 100), `pages ${got.sizes}`).toEqual([]);
  });

  // Last: it writes gates.
  it('writes between pages (creates, deletes, renames, values): each once, none it must see missed', async () => {
    const patch = async (id: number, values: Record<string, unknown>) => {
      const answer = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
        key: editor.key,
        body: { fieldValues: Object.entries(values).map(([k, v]) => fv(k, v)) },
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    };
    const remove = async (id: number) =>
      expect((await call('DELETE', `/workspaces/${workspaceId}/records/${id}`, { key: editor.key })).status).toBe(200);
    const problems: string[] = [];
    let round = 0;
    for (const [field, desc] of [
      ['name', false],
      ['createdAt', true],
      ['createdAt', false],
      ['code', false],
      ['updatedAt', true],
    ] as const) {
      round += 1;
      const before = await expected([gate], field, desc);
      const deleted = new Set<number>();
      const moved = new Set<number>();
      const created: number[] = [];
      const between = async (page: number, items: any[]) => {
        if (page !== 1 && page !== 5) return;
        const seen = items.map((r) => r.id as number);
        const at = before.indexOf(seen.at(-1)!);
        const ahead = before.slice(at + 1).filter((id) => !deleted.has(id) && !moved.has(id));
        created.push(
          (await createOne(editor.key, gate, [fv('label', `Zulu 9999${round}${page}`), fv('code', `G9${page}`)])).id,
        );
        created.push((await createOne(editor.key, gate, [fv('label', `Zulu 0000${round}${page}`)])).id);
        // One ahead deleted, one seen renamed to a name ahead, one ahead renamed to a name behind,
        // one ahead given another code (which moves it only in a sort by code or update time).
        deleted.add(ahead[200]!);
        await remove(ahead[200]!);
        moved.add(seen[10]!);
        await patch(seen[10]!, { label: `Zulu 9998${round}${page}` });
        moved.add(ahead[300]!);
        await patch(ahead[300]!, { label: `Zulu 0000${round}${page}x` });
        const recoded = ahead[400]!;
        if (field === 'code' || field === 'updatedAt') moved.add(recoded);
        await patch(recoded, { code: `G${page}${round}${recoded}` });
      };
      const got = await walk(
        editor.key,
        workspaceId,
        {
          filter: { field: 'objectId', op: 'eq', value: gate },
          sort: [{ field, direction: desc ? 'desc' : 'asc' }],
          limit: 100,
        },
        between,
      );
      const name = `${field} ${desc ? 'desc' : 'asc'}`;
      const twice = got.ids.filter((id, i) => got.ids.indexOf(id) !== i);
      if (twice.length > 0) problems.push(`${name}: seen twice ${twice}`);
      const gone = got.ids.filter((id) => deleted.has(id));
      if (gone.length > 0) problems.push(`${name}: deleted ones seen ${gone}`);
      // A record that did not move (for creation time: every one) is seen once.
      const must = before.filter((id) => !deleted.has(id) && (field === 'createdAt' || !moved.has(id)));
      const missed = must.filter((id) => !got.ids.includes(id));
      if (missed.length > 0) problems.push(`${name}: missed ${missed.length} (${missed.slice(0, 5)})`);
      const order = got.ids.filter((id) => must.includes(id));
      if (JSON.stringify(order) !== JSON.stringify(must.filter((id) => got.ids.includes(id))))
        problems.push(`${name}: out of order`);
      if (full(got.sizes, 100).length > 0) problems.push(`${name}: pages ${got.sizes}`);
    }
    expect(problems).toEqual([]);
  });
});

describe('review: the fallback bounded by the kept totals (live records only)', () => {
  let viewer: { id: number; key: string };
  let workspaceId: number;
  let stand: number;
  let big: number;
  const LIVE = 1_200;
  const DELETED = 30_000;
  const BIG = 20_500;

  beforeAll(async () => {
    viewer = await newUser('viewer');
    workspaceId = await newWorkspace({ [viewer.id]: 'viewer' });
    const define = async (name: string) =>
      (
        await admin('POST', '/admin/objects', {
          name,
          workspaceIds: [workspaceId],
          fields: [{ name: 'code', type: 'text' }],
        })
      ).body.id as number;
    const other = await define('Other');
    stand = await define('Stand');
    big = await define('Big');
    const values = `json_array(json_object('fieldName', 'code', 'value', 'c' || i))`;
    // By name: the others first, then the big object's records, then the stands.
    await bulk(other, workspaceId, 10_000, { name: `printf('Bulk %05d', i)`, values, created: 'i' });
    await bulk(big, workspaceId, BIG, { name: `printf('Yankee %05d', i)`, values, created: 'i' });
    await bulk(stand, workspaceId, LIVE + DELETED, { name: `printf('Zulu %05d', i)`, values, created: 'i' });
    // Most stands deleted, as deletes do (the triggers keep the totals: live ones only).
    await env.DB.prepare(
      `UPDATE records SET deleted = 1, version = 2
       WHERE object_id = ?1 AND id > (SELECT min(id) FROM records WHERE object_id = ?1) + ?2 - 1`,
    )
      .bind(stand, LIVE)
      .run();
    const live = await env.DB.prepare('SELECT count(*) AS n FROM records WHERE object_id = ? AND deleted = 0')
      .bind(stand)
      .first<{ n: number }>();
    expect(live?.n).toBe(LIVE);
  }, 300_000);

  // Past 20,000 records of the object counting deleted ones, the walk is not replaced: its pages may be
  // short, and each reads rows bounded by the walk and the count of the object's records.
  it('an object of 1,200 live records and many deleted, by name: each once, in order, rows bounded', async () => {
    const got = await walk(viewer.key, workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: stand },
      sort: [{ field: 'name' }],
      limit: 100,
      count: true,
    });
    expect(got.ids.length).toBe(LIVE);
    expect(new Set(got.ids).size).toBe(LIVE);
    expect(got.counts[0]).toEqual({ value: LIVE, exact: true });
    expect(Math.max(...got.rows), `rows read per page: ${got.rows}`).toBeLessThan(45_000);
  });

  it('an object of more than 20,000 records is not ordered by SQL: a page reads rows bounded by the walk', async () => {
    const first = await queryRecords(viewer.key, workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: big },
      sort: [{ field: 'createdAt', direction: 'desc' }],
      limit: 100,
    });
    expect(first.status).toBe(200);
    expect(rowsRead(first), 'rows read').toBeLessThan(30_000);
    // Past its bound the walk ends the page early (the object holds too many records for SQL to order).
    expect(first.body.nextCursor).not.toBeNull();
    const byName = await queryRecords(viewer.key, workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: big },
      sort: [{ field: 'name' }],
      limit: 100,
    });
    expect(byName.status).toBe(200);
    expect(rowsRead(byName), 'rows read').toBeLessThan(30_000);
    expect(byName.body.nextCursor).not.toBeNull();
  });
});

describe("review: a rollup's name shared with another object's number field", () => {
  it('a list of one object filtered by its own field answers beside a rollup of that name', async () => {
    const w = await rollupWorld();
    const [a] = await w.accounts(1);
    await w.newOrder({ account: a, amount: 3 });
    await w.newOrder({ account: a, amount: 4 });
    const list = () =>
      call('GET', `/workspaces/${w.workspaceId}/records?objectId=${w.order.id}&field.amount=3`, { key: w.key });
    const before = await list();
    expect(before.status).toBe(200);
    expect(before.body.items).toHaveLength(1);
    expect((await w.define([rollupDef({ name: 'amount', op: 'sum', of: 'amount' }, w.order.id)])).status).toBe(200);
    await untilIndexBuilt(w.account.id);
    // The query names it fine (FieldRef.rollupOf): the list should too, for the orders' own number.
    const query = await queryRecords(w.key, w.workspaceId, {
      filter: {
        and: [
          { field: 'objectId', op: 'eq', value: w.order.id },
          { field: 'amount', op: 'eq', value: 3 },
        ],
      },
    });
    expect(query.status).toBe(200);
    expect(query.body.items).toHaveLength(1);
    const after = await list();
    expect([after.status, after.body.items?.length], JSON.stringify(after.body)).toEqual([200, 1]);
  });
});

describe('review: a sort by a rollup whose records without a value come after many other records', () => {
  it('walks every account once, in order, full pages (the records without a least amount last)', async () => {
    const w = await rollupWorld();
    const noise = (
      await admin('POST', '/admin/objects', {
        name: 'Noise',
        workspaceIds: [w.workspaceId],
        fields: [{ name: 'code', type: 'text' }],
      })
    ).body.id as number;
    await bulk(noise, w.workspaceId, 6_000, {
      name: `printf('Noise %05d', i)`,
      values: `json_array(json_object('fieldName', 'code', 'value', 'n' || i))`,
      created: 'i',
    });
    expect(
      (
        await w.define([
          rollupDef({ name: 'lo', op: 'min', of: 'amount' }, w.order.id),
          rollupDef({ name: 'orders', op: 'count' }, w.order.id),
        ])
      ).status,
    ).toBe(200);
    await untilIndexBuilt(w.account.id);
    await bulk(w.account.id, w.workspaceId, 1_100, {
      name: `printf('Acct %05d', i)`,
      values: `json_array(json_object('fieldName', 'title', 'value', printf('Acct %05d', i)))`,
      created: '1000 + i',
    });
    const accounts = (
      await env.DB.prepare('SELECT id FROM records WHERE object_id = ? ORDER BY id')
        .bind(w.account.id)
        .all<{ id: number }>()
    ).results.map((r) => r.id);
    expect(accounts).toHaveLength(1_100);
    for (let i = 0; i < 30; i++) await w.newOrder({ account: accounts[i * 37], amount: (i * 7) % 11 });
    const expectedOrder = async (desc: boolean) =>
      (
        await env.DB.prepare(
          `SELECT r.id FROM records r LEFT JOIN record_index x ON x.record_id = r.id AND x.field = 'lo' AND x.role = 4
           WHERE r.object_id = ? AND r.deleted = 0
           ORDER BY x.value IS NULL, x.value ${desc ? 'DESC' : 'ASC'}, r.id ${desc ? 'DESC' : 'ASC'}`,
        )
          .bind(w.account.id)
          .all<{ id: number }>()
      ).results.map((r) => r.id);
    for (const desc of [false, true]) {
      const got = await walk(w.key, w.workspaceId, {
        filter: { field: 'objectId', op: 'eq', value: w.account.id },
        sort: [{ field: 'lo', direction: desc ? 'desc' : 'asc' }],
        limit: 100,
      });
      expect(got.ids, `desc ${desc}`).toEqual(await expectedOrder(desc));
      expect(
        got.sizes.slice(0, -1).filter((n) => n !== 100),
        `pages ${got.sizes}`,
      ).toEqual([]);
      const first = got.items.find((r) => r.id === accounts[37]);
      expect(valuesOf(first)).toMatchObject({ orders: 1, lo: 7 });
    }
  });
});

describe('review: what a record shows while a changed rollup is computed again', () => {
  it('a record not reached yet shows its old value or none, never a mix of the old op and the new', async () => {
    const w = await rollupWorld();
    const builder = indexBuilder(w.account.id);
    const [a] = await w.accounts(1);
    await w.newOrder({ account: a, qty: 2 });
    await w.newOrder({ account: a, qty: 3 });
    expect((await w.define([rollupDef({ name: 'orders', op: 'count' }, w.order.id)])).status).toBe(200);
    await untilIndexBuilt(w.account.id);
    const shown = async () => valuesOf((await call('GET', `/records/${a}`, { key: w.key })).body).orders;
    expect(await shown()).toBe(2);
    await builder.hold();
    // `orders` becomes the sum of qty; the computation has not reached the account yet.
    expect((await w.define([rollupDef({ name: 'orders', op: 'sum', of: 'qty' }, w.order.id)])).status).toBe(200);
    expect(await w.computing()).toEqual({ rollups: { afterRecordId: -1 } });
    await w.newOrder({ account: a, qty: 6 });
    const meanwhile = await shown();
    // Old (a count): 2 or 3; new (a sum): 11; none: undefined.
    expect([2, 3, 11, undefined], `shows ${meanwhile}`).toContain(meanwhile);
    await builder.stepOnce(w.account.id);
    expect(await shown()).toBe(11);
    await builder.release(w.account.id);
  });
});
