import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { MAX_RECORD_BYTES } from '../../src/domain/field-values.ts';
import { formulaStep, SETTLE_MS } from '../../src/write/formula-build.ts';
import {
  ADMIN_TOKEN,
  admin,
  call,
  createOne,
  fv,
  indexBuilder,
  newUser,
  newWorkspace,
  queryRecords,
  byName,
  finished,
  foldFeed,
  upload,
  valuesOf,
} from './helpers.ts';
import { countOf, database, mover, movingTenant, stepMove } from './moving.ts';

/**
 * Attacks on formula fields: values past a record's bounds, formulas reading a record's own times
 * across delete and restore, definitions changed under a computation.
 */

async function setup(fields: unknown[], nameTemplate = '{title}') {
  const editor = await newUser('editor');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const made = await admin('POST', '/admin/objects', {
    name: 'Deal',
    nameTemplate,
    workspaceIds: [workspaceId],
    fields,
  });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return { editor, workspaceId, object: made.body };
}

const put = (object: { id: number }, workspaceId: number, fields: unknown[], nameTemplate = '{title}') =>
  admin('PUT', `/admin/objects/${object.id}`, { name: 'Deal', nameTemplate, workspaceIds: [workspaceId], fields });

const formula = (name: string, expression: string, resultType = 'number', extra: object = {}) => ({
  name,
  type: 'formula',
  expression,
  resultType,
  ...extra,
});

async function stored(id: number) {
  const row = await env.DB.prepare('SELECT field_values, version, name FROM records WHERE id = ?')
    .bind(id)
    .first<{ field_values: string; version: number; name: string }>();
  return {
    values: valuesOf({ fieldValues: JSON.parse(row?.field_values ?? '[]') }),
    version: row?.version,
    name: row?.name,
    bytes: new TextEncoder().encode(row?.field_values ?? '').byteLength,
  };
}

/** Runs the object's formula computation to its end, with the clock past the wait for older writes. */
async function computeAll(objectId: number, db: D1Database = env.DB): Promise<void> {
  const later = Date.now() + SETTLE_MS;
  for (let steps = 0; steps < 1000; steps++) if ((await formulaStep(db, objectId, later)).next === undefined) return;
  throw new Error('the computation does not end');
}

const count = async (objectId: number) =>
  (await env.DB.prepare('SELECT count(*) AS n FROM records WHERE object_id = ?').bind(objectId).first<{ n: number }>())
    ?.n;

/** 25,000 euro signs: 75 KB of UTF-8; four of them joined are a text of 100,000 characters (300 KB). */
const EUROS = '€'.repeat(25_000);
const BIG = [
  { name: 'title', type: 'text' },
  { name: 't', type: 'text' },
  ...[1, 2, 3, 4].map((i) => formula(`f${i}`, 't & t & t & t', 'text')),
];

describe('a record made larger than 1 MiB by its formulas', () => {
  it('is refused on create (422 record_too_large), nothing written', async () => {
    const { editor, object } = await setup(BIG);
    const made = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'big'), fv('t', EUROS)] }],
    });
    // Today: 201, and a record of ~1.27 MB of field values is stored.
    expect(made.status).toBe(422);
    expect(made.body.errors).toEqual([
      expect.objectContaining({ pointer: '/0/fieldValues', code: 'record_too_large' }),
    ]);
    expect(await count(object.id)).toBe(0);
  });

  it('is refused on patch (422 record_too_large), nothing written', async () => {
    const { editor, workspaceId, object } = await setup(BIG);
    const made = await createOne(editor.key, object.id, [fv('title', 'small'), fv('t', 'x')]);
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${made.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('t', EUROS)] },
    });
    expect(patched.status).toBe(422);
    expect(patched.body.errors).toEqual([
      expect.objectContaining({ pointer: '/fieldValues', code: 'record_too_large' }),
    ]);
    const after = await stored(made.id);
    expect(after.version).toBe(1);
    expect(after.bytes).toBeLessThanOrEqual(MAX_RECORD_BYTES);
  });

  it('is not stored by the background computation either', async () => {
    const plain = BIG.filter((field) => field.type !== 'formula');
    const { editor, workspaceId, object } = await setup(plain);
    await indexBuilder(object.id).hold();
    const made = await createOne(editor.key, object.id, [fv('title', 'older'), fv('t', EUROS)]);
    expect((await put(object, workspaceId, BIG)).status).toBe(200);
    await computeAll(object.id);
    expect((await stored(made.id)).bytes).toBeLessThanOrEqual(MAX_RECORD_BYTES);
  });
});

describe('a formula reading the record’s own times', () => {
  const TIMES = [
    { name: 'title', type: 'text' },
    { name: 'note', type: 'text' },
    formula('touched', 'updatedAt', 'datetime'),
    formula('made', 'createdAt', 'datetime'),
  ];

  it('holds createdAt and updatedAt as the record answers them, on create and patch', async () => {
    const { editor, workspaceId, object } = await setup(TIMES);
    const made = await createOne(editor.key, object.id, [fv('title', 'a')]);
    expect(valuesOf(made)).toMatchObject({
      touched: new Date(made.updatedAt).toISOString(),
      made: new Date(made.createdAt).toISOString(),
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${made.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('note', 'n')] },
    });
    expect(valuesOf(patched.body)).toMatchObject({ touched: new Date(patched.body.updatedAt).toISOString() });
  });

  it('follows updatedAt through a delete and a restore (each changes updatedAt)', async () => {
    const { editor, workspaceId, object } = await setup(TIMES);
    const made = await createOne(editor.key, object.id, [fv('title', 'a')]);
    const path = `/workspaces/${workspaceId}/records/${made.id}`;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const deleted = await call('DELETE', path, { key: editor.key });
    expect(deleted.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const restored = await call('POST', `${path}/restore`, { key: editor.key });
    expect(restored.status).toBe(200);
    expect(restored.body.updatedAt).toBeGreaterThan(made.updatedAt);
    // Today: `touched` still holds the create's time.
    expect(valuesOf(restored.body).touched).toBe(new Date(restored.body.updatedAt).toISOString());
  });

  it('leaves a patch that changes nothing a no-op after a restore', async () => {
    const { editor, workspaceId, object } = await setup(TIMES);
    const made = await createOne(editor.key, object.id, [fv('title', 'a')]);
    const path = `/workspaces/${workspaceId}/records/${made.id}`;
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await call('DELETE', path, { key: editor.key })).status).toBe(200);
    const restored = await call('POST', `${path}/restore`, { key: editor.key });
    expect(restored.body.version).toBe(3);
    const noop = await call('PATCH', path, { key: editor.key, body: {} });
    expect(noop.status).toBe(200);
    // Today: version 4 and a new updatedAt, for a patch of nothing.
    expect({ version: noop.body.version, updatedAt: noop.body.updatedAt }).toEqual({
      version: restored.body.version,
      updatedAt: restored.body.updatedAt,
    });
  });
});

describe('a definition', () => {
  it('takes an expression of up to 2,000 characters, however many UTF-16 units', async () => {
    const workspaceId = await newWorkspace();
    // 1,502 characters (3,002 UTF-16 code units).
    const expression = `"${'😀'.repeat(1500)}"`;
    const made = await admin('POST', '/admin/objects', {
      name: 'Emoji',
      workspaceIds: [workspaceId],
      fields: [{ name: 'title', type: 'text' }, formula('smiles', expression, 'text')],
    });
    expect(made.status, JSON.stringify(made.body?.errors)).toBe(201);
  });

  it('changing the type of a field a formula reads has the formula computed again', async () => {
    // ISBLANK reads a value of any type: the formula stays valid, but what it computes changes.
    const before = [
      { name: 'title', type: 'text' },
      { name: 'n', type: 'number' },
      formula('blank', 'ISBLANK(n)', 'boolean'),
      formula('shown', '"n=" & n', 'text'),
    ];
    const { editor, workspaceId, object } = await setup(before);
    await indexBuilder(object.id).hold();
    const made = await createOne(editor.key, object.id, [fv('title', 'a'), fv('n', 5)]);
    expect(valuesOf(made)).toMatchObject({ blank: false, shown: 'n=5' });
    const after = before.map((field) => (field.name === 'n' ? { name: 'n', type: 'text' } : field));
    const changed = await put(object, workspaceId, after);
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    await computeAll(object.id);
    // The number 5 is no text: as the formula now computes it, n is blank.
    const read = await call('GET', `/workspaces/${workspaceId}/records/${made.id}`, { key: editor.key });
    const noop = await call('PATCH', `/workspaces/${workspaceId}/records/${made.id}`, { key: editor.key, body: {} });
    expect({ read: valuesOf(read.body), noopVersion: noop.body.version }).toEqual({
      read: expect.objectContaining({ blank: true, shown: 'n=' }),
      noopVersion: read.body.version,
    });
  });

  it('replacing a field of the same name that holds values by a formula: each record ends computed', async () => {
    const fields = [
      { name: 'title', type: 'text' },
      { name: 'amount', type: 'number' },
      { name: 'score', type: 'text', indexed: true },
    ];
    const { editor, workspaceId, object } = await setup(fields);
    await indexBuilder(object.id).hold();
    const a = await createOne(editor.key, object.id, [fv('title', 'a'), fv('amount', 2), fv('score', 'high')]);
    const b = await createOne(editor.key, object.id, [fv('title', 'b'), fv('score', 'low')]);
    const replaced = fields.map((field) =>
      field.name === 'score' ? formula('score', 'amount * 10', 'number', { indexed: true }) : field,
    );
    expect((await put(object, workspaceId, replaced)).status).toBe(200);
    await computeAll(object.id);
    while (await indexBuilder(object.id).stepOnce(object.id));
    expect((await stored(a.id)).values).toMatchObject({ score: 20 });
    expect((await stored(b.id)).values).not.toHaveProperty('score');
    const found = await queryRecords(editor.key, workspaceId, {
      filter: {
        and: [
          { field: 'objectId', op: 'eq', value: object.id },
          { field: 'score', op: 'gte', value: 0 },
        ],
      },
      sort: [{ field: 'score', direction: 'desc' }],
    });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.items.map((r: { id: number }) => r.id)).toEqual([a.id]);
  });
});

describe('writes of formulas', () => {
  it('store a text result of exactly 100,000 characters, and none past it', async () => {
    const { editor, object } = await setup([{ name: 'title', type: 'text' }, formula('bang', 'title & "!"', 'text')]);
    const at = await createOne(editor.key, object.id, [fv('title', '😀'.repeat(99_999))]);
    expect((await stored(at.id)).values.bang).toBe(`${'😀'.repeat(99_999)}!`);
    const past = await createOne(editor.key, object.id, [fv('title', 'a'.repeat(100_000))]);
    expect((await stored(past.id)).values).not.toHaveProperty('bang');
  });

  it('compute the longest chain of operators 2,000 characters allow, in the Workers runtime', async () => {
    const sum = Array.from({ length: 1000 }, () => 'a').join('+');
    const { editor, object } = await setup([{ name: 'a', type: 'number' }, formula('sum', sum)], '{a}');
    const made = await createOne(editor.key, object.id, [fv('a', 2)]);
    expect(valuesOf(made)).toEqual({ a: 2, sum: 2000 });
  });

  it('are computed by an upsert import, for the rows it updates and those it creates', async () => {
    const fields = [
      { name: 'title', type: 'text' },
      { name: 'code', type: 'text', unique: true },
      { name: 'qty', type: 'integer' },
      formula('twice', 'qty * 2'),
    ];
    const { editor, workspaceId, object } = await setup(fields);
    const old = await createOne(editor.key, object.id, [fv('title', 'old'), fv('code', 'A'), fv('qty', 1)]);
    const lines = [
      JSON.stringify({ fieldValues: [fv('code', 'a'), fv('qty', 5), fv('twice', 1)] }),
      JSON.stringify({ fieldValues: [fv('title', 'new'), fv('code', 'B'), fv('qty', 7)] }),
    ];
    const imported = await upload(
      editor.key,
      workspaceId,
      `objectId=${object.id}&mode=upsert&matchOn=code`,
      lines.join('\n'),
    );
    expect(imported.status).toBe(202);
    expect(await finished(editor.key, imported.body.id)).toMatchObject({ rows: { created: 1, updated: 1, failed: 0 } });
    expect((await stored(old.id)).values).toMatchObject({ qty: 5, twice: 10 });
    const all = await queryRecords(editor.key, workspaceId, { filter: { field: 'twice', op: 'eq', value: 14 } });
    expect(all.body.items.map((r: { name: string }) => r.name)).toEqual(['new']);
  });

  it('leave a {} patch a no-op on a record the background computation has not reached yet', async () => {
    const fields = [
      { name: 'title', type: 'text' },
      { name: 'amount', type: 'number' },
    ];
    const { editor, workspaceId, object } = await setup(fields);
    await indexBuilder(object.id).hold();
    const made = await createOne(editor.key, object.id, [fv('title', 'x'), fv('amount', 2)]);
    expect((await put(object, workspaceId, [...fields, formula('double', 'amount * 2')])).status).toBe(200);
    const noop = await call('PATCH', `/workspaces/${workspaceId}/records/${made.id}`, { key: editor.key, body: {} });
    expect(noop.status).toBe(200);
    // Today: version 2 and a new updatedAt, for a patch of nothing (the formula is computed by it).
    expect({ version: noop.body.version, updatedAt: noop.body.updatedAt }).toEqual({
      version: made.version,
      updatedAt: made.updatedAt,
    });
  });
});

describe('a member whose role hides a formula', () => {
  it('names it in a filter or a sort as a field the object does not have', async () => {
    const owner = await newUser('owner');
    const member = await newUser('member');
    const workspaceId = await newWorkspace({ [owner.id]: 'editor' });
    const fields = [
      { name: 'title', type: 'text' },
      { name: 'amount', type: 'number' },
      formula('secret', 'amount * 2', 'number', { indexed: true }),
    ];
    const object = (await admin('POST', '/admin/objects', { name: 'Deal', workspaceIds: [workspaceId], fields })).body;
    const rule = { objectId: object.id, read: true, fields: { secret: 'hidden' } };
    const role = await admin('POST', '/admin/roles', { name: `r ${Math.random()}`, objects: [rule] });
    expect(role.status).toBe(201);
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${member.id}`, { roleId: role.body.id });
    await createOne(owner.key, object.id, [fv('title', 'x'), fv('amount', 7)]);
    for (const body of [
      (name: string) => ({ filter: { field: name, op: 'eq', value: 14 } }),
      (name: string) => ({ filter: { field: 'objectId', op: 'eq', value: object.id }, sort: [{ field: name }] }),
    ]) {
      const hidden = await queryRecords(member.key, workspaceId, body('secret'));
      const missing = await queryRecords(member.key, workspaceId, body('nosuch'));
      expect(JSON.stringify(hidden.body).replaceAll('secret', 'X')).toBe(
        JSON.stringify(missing.body).replaceAll('nosuch', 'X'),
      );
      expect(hidden.status).toBe(missing.status);
    }
    const list = await call('GET', `/workspaces/${workspaceId}/records?objectId=${object.id}&field.secret=14`, {
      key: member.key,
    });
    const none = await call('GET', `/workspaces/${workspaceId}/records?objectId=${object.id}&field.nosuch=14`, {
      key: member.key,
    });
    expect(list.status).toBe(none.status);
    const read = await queryRecords(member.key, workspaceId, { filter: { field: 'amount', op: 'eq', value: 7 } });
    expect(read.body.items.map(valuesOf)).toEqual([{ title: 'x', amount: 7 }]);
  });
});

describe('the background computation', () => {
  const PLAIN = [
    { name: 'title', type: 'text' },
    { name: 'amount', type: 'number' },
  ];

  it('racing patches: each record’s versions are in the feed once each, in order, and end computed', async () => {
    const { editor, workspaceId, object } = await setup(PLAIN);
    await indexBuilder(object.id).hold();
    const ids: number[] = [];
    for (let i = 0; i < 70; i++)
      ids.push((await createOne(editor.key, object.id, [fv('title', `t${i}`), fv('amount', i)])).id);
    expect((await put(object, workspaceId, [...PLAIN, formula('double', 'amount * 2')])).status).toBe(200);
    const answered = new Map<number, number[]>();
    const patchSome = async (round: number) => {
      const answers = await Promise.all(
        ids
          .filter((_, i) => i % 3 === round)
          .map((id) =>
            call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
              key: editor.key,
              body: { fieldValues: [fv('amount', 1000 + round)] },
            }),
          ),
      );
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        answered.set(answer.body.id, [...(answered.get(answer.body.id) ?? []), answer.body.version]);
      }
    };
    await Promise.all([computeAll(object.id).catch(() => computeAll(object.id)), patchSome(0), patchSome(1)]);
    await computeAll(object.id);
    const feed = await call('GET', `/workspaces/${workspaceId}/changes?limit=1000`, { key: editor.key });
    const versions = new Map<number, number[]>();
    for (const item of feed.body.items as { recordId: number; version: number }[])
      versions.set(item.recordId, [...(versions.get(item.recordId) ?? []), item.version]);
    for (const [i, id] of ids.entries()) {
      const { values, version } = await stored(id);
      expect(versions.get(id), `record ${id}`).toEqual(Array.from({ length: version ?? 0 }, (_, v) => v + 1));
      for (const v of answered.get(id) ?? []) expect(versions.get(id)).toContain(v);
      const amount = i % 3 === 0 ? 1000 : i % 3 === 1 ? 1001 : i;
      expect(values).toMatchObject({ amount, double: amount * 2 });
    }
  });

  it('adds changes that a feed consumer folds into each record as it is, deleted and restored ones too', async () => {
    const { editor, workspaceId, object } = await setup(PLAIN);
    await indexBuilder(object.id).hold();
    const ids: number[] = [];
    for (let i = 0; i < 12; i++)
      ids.push((await createOne(editor.key, object.id, [fv('title', `t${i}`), fv('amount', i)])).id);
    const path = (id: number) => `/workspaces/${workspaceId}/records/${id}`;
    for (const id of ids.slice(0, 6)) expect((await call('DELETE', path(id), { key: editor.key })).status).toBe(200);
    expect((await put(object, workspaceId, [...PLAIN, formula('double', 'amount * 2')])).status).toBe(200);
    await computeAll(object.id);
    for (const id of ids.slice(0, 3))
      expect((await call('POST', `${path(id)}/restore`, { key: editor.key })).status).toBe(200);
    const feed = await call('GET', `/workspaces/${workspaceId}/changes?limit=1000`, { key: editor.key });
    const last = new Map(foldFeed(feed.body.items).map((state) => [state.id, state]));
    for (const id of ids) {
      const read = await call('GET', `/records/${id}`, { key: editor.key });
      expect(last.get(id), `record ${id}`).toEqual(byName(read.body));
    }
  });

  it('with the definition changed again between a chunk’s read and its commit, ends with the last one', async () => {
    const { editor, workspaceId, object } = await setup(PLAIN);
    await indexBuilder(object.id).hold();
    const ids: number[] = [];
    for (let i = 0; i < 60; i++)
      ids.push((await createOne(editor.key, object.id, [fv('title', `t${i}`), fv('amount', i)])).id);
    expect((await put(object, workspaceId, [...PLAIN, formula('total', 'amount * 2')])).status).toBe(200);
    let batches = 0;
    const racing = new Proxy(env.DB, {
      get(target, property) {
        if (property === 'batch')
          return async (statements: D1PreparedStatement[]) => {
            // The chunk's commit is its second batch: the definition changes just before it.
            if (++batches === 2)
              expect((await put(object, workspaceId, [...PLAIN, formula('total', 'amount * 3')])).status).toBe(200);
            return target.batch(statements);
          };
        const value = Reflect.get(target, property);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await formulaStep(racing as D1Database, object.id, Date.now() + SETTLE_MS);
    expect(batches).toBeGreaterThanOrEqual(2);
    await computeAll(object.id);
    for (const [i, id] of ids.entries()) expect((await stored(id)).values).toMatchObject({ total: i * 3 });
  });

  it('keeps the name a formula makes, and the feed carries it', async () => {
    const fields = [{ name: 'title', type: 'text' }, formula('label', 'UPPER(title)', 'text')];
    const { editor, workspaceId, object } = await setup(fields, '{label}');
    await indexBuilder(object.id).hold();
    const made = await createOne(editor.key, object.id, [fv('title', 'ada')]);
    expect(made.name).toBe('ADA');
    const changed = [fields[0], formula('label', 'LOWER(title) & "!"', 'text')];
    expect((await put(object, workspaceId, changed, '{label}')).status).toBe(200);
    await computeAll(object.id);
    expect((await stored(made.id)).name).toBe('ada!');
    const feed = await call('GET', `/workspaces/${workspaceId}/changes?limit=100`, { key: editor.key });
    const last = feed.body.items.filter((item: { recordId: number }) => item.recordId === made.id).at(-1);
    expect(last).toMatchObject({ type: 'updated', version: 2, name: 'ada!' });
  });

  it('writes no version when a float result is stored as computed (a no-op patch stays one)', async () => {
    const { editor, workspaceId, object } = await setup([...PLAIN, formula('f', 'amount + 0.2')]);
    const made = await createOne(editor.key, object.id, [fv('title', 'x'), fv('amount', 0.1)]);
    expect(valuesOf(made).f).toBe(0.1 + 0.2);
    const noop = await call('PATCH', `/workspaces/${workspaceId}/records/${made.id}`, { key: editor.key, body: {} });
    expect(noop.body.version).toBe(1);
    await computeAll(object.id);
    expect((await stored(made.id)).version).toBe(1);
  });
});

describe('a tenant moved while a formula is computed for its records', () => {
  it('ends with every record computed where the tenant now is, each version in the feed once', async () => {
    const tenant = await movingTenant('DB_2', 'Formulas');
    await mover(tenant.id).hold();
    await indexBuilder(tenant.objectId).hold();
    const ids: number[] = [];
    for (let i = 0; i < 70; i++)
      ids.push((await createOne(tenant.key, tenant.objectId, [fv('firstName', `f${i}`), fv('score', i)])).id);
    const fields = [
      { name: 'firstName', type: 'text', required: true },
      { name: 'email', type: 'email', unique: true },
      { name: 'score', type: 'number', indexed: true },
      { name: 'company', type: 'reference', target: tenant.companyObjectId },
      formula('double', 'score * 2', 'number', { indexed: true }),
    ];
    const changed = await call('PUT', `/admin/objects/${tenant.objectId}`, {
      key: tenant.adminKey,
      body: { name: 'Contact', workspaceIds: [tenant.workspaceId], nameTemplate: '{firstName}', fields },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    // One chunk before the move, one while it copies, patches meanwhile; the rest where the tenant ends.
    await indexBuilder(tenant.objectId).stepOnce(tenant.objectId);
    const started = await call('POST', `/tenants/${tenant.id}/move`, { key: ADMIN_TOKEN, body: { database: 'DB_3' } });
    expect(started.status).toBe(202);
    await stepMove(tenant.id, started.body.id, (move) => move.rowsCopied > 0);
    await indexBuilder(tenant.objectId).stepOnce(tenant.objectId);
    for (const id of ids.filter((_, i) => i % 10 === 0)) {
      const patched = await call('PATCH', `/workspaces/${tenant.workspaceId}/records/${id}`, {
        key: tenant.key,
        body: { fieldValues: [fv('score', 500)] },
      });
      expect(patched.status).toBe(200);
    }
    expect((await stepMove(tenant.id, started.body.id)).status).toBe('succeeded');
    expect(await countOf(tenant.id, 'DB_2')).toBe(0);
    await computeAll(tenant.objectId, database('DB_3'));
    const feed = await call('GET', `/workspaces/${tenant.workspaceId}/changes?limit=1000`, { key: tenant.key });
    expect(feed.status).toBe(200);
    const versions = new Map<number, number[]>();
    for (const item of feed.body.items as { recordId: number; version: number }[])
      versions.set(item.recordId, [...(versions.get(item.recordId) ?? []), item.version]);
    for (const [i, id] of ids.entries()) {
      const row = await database('DB_3')
        .prepare('SELECT field_values, version FROM records WHERE id = ?')
        .bind(id)
        .first<{ field_values: string; version: number }>();
      const score = i % 10 === 0 ? 500 : i;
      expect(valuesOf({ fieldValues: JSON.parse(row?.field_values ?? '[]') }), `record ${id}`).toMatchObject({
        score,
        double: score * 2,
      });
      expect(versions.get(id), `record ${id}`).toEqual(Array.from({ length: row?.version ?? 0 }, (_, v) => v + 1));
    }
    const found = await queryRecords(tenant.key, tenant.workspaceId, {
      filter: { field: 'double', op: 'eq', value: 1000 },
    });
    expect(found.body.items.length).toBe(ids.filter((_, i) => i % 10 === 0).length);
  });
});
