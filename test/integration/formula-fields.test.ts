import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { FORMULAS_BUILD } from '../../src/storage/record-index.ts';
import { formulaStep, SETTLE_MS } from '../../src/write/formula-build.ts';
import {
  admin,
  call,
  createOne,
  download,
  expectProblem,
  finished,
  fv,
  indexBuilder,
  newUser,
  newWorkspace,
  queryRecords,
  upload,
  valuesOf,
} from './helpers.ts';

/**
 * Formula fields: computed on every kind of write from the record's other values, stored with it,
 * queried and exported like any value, never written; a definition whose formula does not fit is
 * refused at its expression; a formula new to an object with records is computed for them in
 * the background.
 */

const DEAL = [
  { name: 'title', type: 'text', required: true },
  { name: 'amount', type: 'number' },
  { name: 'quantity', type: 'integer' },
  { name: 'closes', type: 'date' },
  { name: 'code', type: 'text', unique: true },
  { name: 'total', type: 'formula', expression: '{amount} * {quantity}', resultType: 'number', indexed: true },
  { name: 'label', type: 'formula', expression: 'UPPER(title) & " x" & quantity', resultType: 'text' },
  { name: 'large', type: 'formula', expression: 'total >= 1000', resultType: 'boolean' },
  { name: 'followUp', type: 'formula', expression: 'DATEADD(closes, 1, "months")', resultType: 'date' },
];

async function setup(fields: unknown[] = DEAL) {
  const editor = await newUser('editor');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const made = await admin('POST', '/admin/objects', {
    name: 'Deal',
    nameTemplate: '{title}',
    workspaceIds: [workspaceId],
    fields,
  });
  expect(made.status).toBe(201);
  return { editor, workspaceId, object: made.body };
}

async function stored(id: number) {
  const row = await env.DB.prepare('SELECT field_values, version FROM records WHERE id = ?')
    .bind(id)
    .first<{ field_values: string; version: number }>();
  return { values: valuesOf({ fieldValues: JSON.parse(row?.field_values ?? '[]') }), version: row?.version };
}

/** Runs the object's formula computation to its end, with the clock past the wait for older writes. */
async function computeAll(objectId: number): Promise<number> {
  const later = Date.now() + SETTLE_MS;
  let steps = 0;
  for (;;) {
    const step = await formulaStep(env.DB, objectId, later);
    steps++;
    if (step.next === undefined) return steps;
    if (steps > 1000) throw new Error('the computation does not end');
  }
}

describe('formula fields', () => {
  it('are computed on create, patch, batch patch, upsert and import, and stored with the record', async () => {
    const { editor, workspaceId, object } = await setup();
    const made = await createOne(editor.key, object.id, [
      fv('title', 'Big'),
      fv('amount', 12.5),
      fv('quantity', 100),
      fv('closes', '2024-01-31'),
      fv('code', 'a'),
    ]);
    expect(valuesOf(made)).toMatchObject({ total: 1250, label: 'BIG x100', large: true, followUp: '2024-02-29' });
    expect((await stored(made.id)).values).toEqual(valuesOf(made));

    // A patch of one input: every formula reading it follows; one whose inputs are blank is absent.
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${made.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('quantity', 2), fv('closes', null)] },
    });
    expect(patched.status).toBe(200);
    expect(valuesOf(patched.body)).toMatchObject({ total: 25, label: 'BIG x2', large: false });
    expect(valuesOf(patched.body)).not.toHaveProperty('followUp');

    const batch = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: [{ id: made.id, fieldValues: [fv('amount', 1000)] }],
    });
    expect(batch.status).toBe(200);
    expect(valuesOf(batch.body[0].record)).toMatchObject({ total: 2000, large: true });

    const upserted = await call('POST', `/objects/${object.id}/records/upsert`, {
      key: editor.key,
      body: { matchOn: 'code', items: [{ fieldValues: [fv('code', 'a'), fv('quantity', 3)] }] },
    });
    expect(upserted.status).toBe(200);
    expect(valuesOf(upserted.body[0].record)).toMatchObject({ total: 3000, label: 'BIG x3' });

    const lines = [
      JSON.stringify({ fieldValues: [fv('title', 'imported'), fv('amount', 2), fv('quantity', 4)] }),
      // An export's line holds the formulas' values: they are not written, and do not fail the row.
      JSON.stringify({ fieldValues: [fv('title', 'exported'), fv('amount', 1), fv('total', 999)] }),
    ];
    const imported = await upload(editor.key, workspaceId, `objectId=${object.id}`, lines.join('\n'));
    expect(imported.status).toBe(202);
    expect(await finished(editor.key, imported.body.id)).toMatchObject({ rows: { created: 2, failed: 0 } });
    const rows = await env.DB.prepare('SELECT field_values FROM records WHERE object_id = ? ORDER BY id')
      .bind(object.id)
      .all<{ field_values: string }>();
    const byTitle = new Map(
      rows.results.map((r) => valuesOf({ fieldValues: JSON.parse(r.field_values) })).map((v) => [v.title, v]),
    );
    expect(byTitle.get('imported')).toMatchObject({ total: 8, label: 'IMPORTED x4', large: false });
    expect(byTitle.get('exported')).not.toHaveProperty('total');
  });

  it('refuses a write naming a formula, at its value, and stores nothing', async () => {
    const { editor, workspaceId, object } = await setup();
    const made = await createOne(editor.key, object.id, [fv('title', 'A'), fv('amount', 1), fv('quantity', 1)]);
    const create = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'B'), fv('total', 5)] }],
    });
    expectProblem(create, 422, 'unprocessable');
    expect(create.body.errors).toEqual([
      expect.objectContaining({ pointer: '/0/fieldValues/1', code: 'read_only_field' }),
    ]);
    const patch = await call('PATCH', `/workspaces/${workspaceId}/records/${made.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('label', 'mine')] },
    });
    expect(patch.status).toBe(422);
    expect(patch.body.errors).toEqual([
      expect.objectContaining({ pointer: '/fieldValues/0', code: 'read_only_field' }),
    ]);
    expect(await stored(made.id)).toEqual({ values: valuesOf(made), version: 1 });
    const count = await env.DB.prepare('SELECT count(*) AS n FROM records WHERE object_id = ?')
      .bind(object.id)
      .first<{ n: number }>();
    expect(count?.n).toBe(1);
  });

  it('are filtered and sorted like any value of their type', async () => {
    const { editor, workspaceId, object } = await setup();
    for (const [title, amount, quantity] of [
      ['a', 10, 1],
      ['b', 500, 3],
      ['c', 2, 2],
      ['d', 7, 1000],
    ] as const)
      await createOne(editor.key, object.id, [fv('title', title), fv('amount', amount), fv('quantity', quantity)]);
    const found = await queryRecords(editor.key, workspaceId, {
      filter: {
        and: [
          { field: 'objectId', op: 'eq', value: object.id },
          { field: 'total', op: 'gte', value: 10 },
        ],
      },
      sort: [{ field: 'total', direction: 'desc' }],
    });
    expect(found.status).toBe(200);
    expect(found.body.items.map((r: { name: string }) => r.name)).toEqual(['d', 'b', 'a']);
    const flagged = await queryRecords(editor.key, workspaceId, {
      filter: { field: 'large', op: 'eq', value: true },
    });
    expect(flagged.body.items.map((r: { name: string }) => r.name).sort()).toEqual(['b', 'd']);
  });

  it('go out in an export and back in by id unchanged', async () => {
    const { editor, workspaceId, object } = await setup();
    const made = await createOne(editor.key, object.id, [fv('title', 'x'), fv('amount', 3), fv('quantity', 5)]);
    const path = `/workspaces/${workspaceId}/records/export?objectId=${object.id}&format=csv`;
    const csv = new TextDecoder().decode(await (await download(editor.key, path)).arrayBuffer());
    expect(csv.split('\n')[0]).toContain('total');
    expect(csv).toContain('X x5');
    const back = await upload(editor.key, workspaceId, `objectId=${object.id}&mode=update&matchOn=id`, csv, 'text/csv');
    expect(back.status).toBe(202);
    expect(await finished(editor.key, back.body.id)).toMatchObject({ rows: { unchanged: 1, updated: 0, failed: 0 } });
    expect((await stored(made.id)).version).toBe(1);
  });
});

describe('a definition with formulas', () => {
  const definition = (workspaceId: number, fields: unknown[]) => ({ name: 'Bad', workspaceIds: [workspaceId], fields });
  const base = [
    { name: 'title', type: 'text' },
    { name: 'amount', type: 'number' },
    { name: 'tags', type: 'multiSelect', options: ['a'] },
  ];

  it('is refused at each expression that does not fit, with its position, every problem listed', async () => {
    const workspaceId = await newWorkspace();
    const formula = (name: string, expression: string, resultType = 'number') => ({
      name,
      type: 'formula',
      expression,
      resultType,
    });
    const fields = [
      ...base,
      formula('unknown', 'amount + missing'),
      formula('wrongType', 'amount * "x"'),
      formula('arity', 'ROUND()'),
      formula('a', 'b + 1'),
      formula('b', 'a + 1'),
      formula('long', `1${' + 1'.repeat(500)}`),
      formula('deep', `${'('.repeat(33)}1${')'.repeat(33)}`),
      formula('result', 'title', 'number'),
      formula('unusable', 'LEN(tags)'),
    ];
    const before = await env.DB.prepare('SELECT count(*) AS n FROM objects').first<{ n: number }>();
    const refused = await admin('POST', '/admin/objects', definition(workspaceId, fields));
    expect(refused.status).toBe(422);
    const at = (i: number) =>
      refused.body.errors.filter((e: { pointer: string }) => e.pointer === `/fields/${i}/expression`);
    for (let i = 3; i < fields.length; i++) {
      expect(at(i).length, `field ${i}`).toBeGreaterThan(0);
      for (const problem of at(i)) expect(typeof problem.position).toBe('number');
    }
    expect(at(3)[0]).toMatchObject({ position: 9 });
    expect(at(8).length).toBeGreaterThan(0);
    expect((await env.DB.prepare('SELECT count(*) AS n FROM objects').first<{ n: number }>())?.n).toBe(before?.n);
    // 32 levels and 2,000 characters are within bounds.
    const bounds = [
      ...base,
      formula('deep', `${'('.repeat(32)}1${')'.repeat(32)}`),
      formula('long', `1${' '.repeat(1999)}`),
    ];
    expect((await admin('POST', '/admin/objects', definition(workspaceId, bounds))).status).toBe(201);
  });

  it('needs an expression and a result type, and takes them only on a formula', async () => {
    const workspaceId = await newWorkspace();
    const refused = await admin(
      'POST',
      '/admin/objects',
      definition(workspaceId, [
        { name: 'f', type: 'formula' },
        { name: 't', type: 'text', expression: '1' },
        { name: 'u', type: 'formula', expression: '1', resultType: 'number', unique: true },
      ]),
    );
    expect(refused.status).toBe(400);
    expect(refused.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([
      '/fields/0/expression',
      '/fields/0/resultType',
      '/fields/1/expression',
      '/fields/2/unique',
    ]);
  });

  it('keeps a formula from showing a field a role hides', async () => {
    const owner = await newUser('owner');
    const workspaceId = await newWorkspace({ [owner.id]: 'editor' });
    const fields = [...base, { name: 'double', type: 'formula', expression: 'amount * 2', resultType: 'number' }];
    const object = (await admin('POST', '/admin/objects', definition(workspaceId, fields))).body;
    const rule = (hidden: Record<string, string>) => ({
      name: `r ${Math.random()}`,
      objects: [{ objectId: object.id, read: true, fields: hidden }],
    });
    const leaky = await admin('POST', '/admin/roles', rule({ amount: 'hidden' }));
    expect(leaky.status).toBe(422);
    expect(leaky.body.errors).toEqual([
      expect.objectContaining({ pointer: '/objects/0/fields/amount', code: 'formula_field' }),
    ]);
    const tight = await admin('POST', '/admin/roles', rule({ amount: 'hidden', double: 'hidden' }));
    expect(tight.status).toBe(201);
    // The object cannot then gain a formula that role would show.
    const more = [...fields, { name: 'triple', type: 'formula', expression: 'double * 1.5', resultType: 'number' }];
    const refused = await admin('PUT', `/admin/objects/${object.id}`, definition(workspaceId, more));
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([
      expect.objectContaining({ pointer: '/fields/4/expression', code: 'hidden_field' }),
    ]);
  });
});

describe('a formula new to an object with records', () => {
  it('is computed for them in the background, each as a change in the feed, and reads say so meanwhile', async () => {
    const fields = DEAL.filter((field) => field.type !== 'formula');
    const { editor, workspaceId, object } = await setup(fields);
    await indexBuilder(object.id).hold();
    const ids: number[] = [];
    for (let i = 0; i < 120; i++)
      ids.push((await createOne(editor.key, object.id, [fv('title', `t${i}`), fv('amount', i), fv('quantity', 2)])).id);
    const changed = await admin('PUT', `/admin/objects/${object.id}`, {
      name: 'Deal',
      nameTemplate: '{title}',
      workspaceIds: [workspaceId],
      fields: [...fields, { name: 'total', type: 'formula', expression: 'amount * quantity', resultType: 'number' }],
    });
    expect(changed.status).toBe(200);
    const due = await env.DB.prepare(
      'SELECT after_record_id AS after FROM index_builds WHERE object_id = ? AND field = ?',
    )
      .bind(object.id, FORMULAS_BUILD)
      .first<{ after: number }>();
    expect(due).toEqual({ after: -1 });
    const definitionRead = await admin('GET', `/admin/objects/${object.id}`);
    expect(definitionRead.body.computing).toEqual({ formulas: { afterRecordId: -1 } });
    expect((await stored(ids[5] as number)).values).not.toHaveProperty('total');

    // Meanwhile, concurrent patches: none is lost, whichever of the two writes first.
    const steps = computeAll(object.id);
    const patches = await Promise.all(
      ids.slice(0, 30).map((id) =>
        call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
          key: editor.key,
          body: { fieldValues: [fv('quantity', 3)] },
        }),
      ),
    );
    await steps;
    await computeAll(object.id);
    for (const answer of patches) expect(answer.status).toBe(200);
    for (const [i, id] of ids.entries()) {
      const { values } = await stored(id);
      const quantity = i < 30 ? 3 : 2;
      expect(values).toMatchObject({ quantity, total: i * quantity });
    }
    expect(
      await env.DB.prepare('SELECT count(*) AS n FROM index_builds WHERE object_id = ?').bind(object.id).first(),
    ).toEqual({ n: 0 });
    expect((await admin('GET', `/admin/objects/${object.id}`)).body.computing).toBeUndefined();
    // Every record untouched by a patch got its value as one change of its own, in the feed.
    const feed = await call('GET', `/workspaces/${workspaceId}/changes?limit=500`, { key: editor.key });
    const untouched = new Set(ids.slice(30));
    const updates = feed.body.items.filter(
      (item: { type: string; recordId: number }) => item.type === 'updated' && untouched.has(item.recordId),
    );
    expect(updates.map((item: { recordId: number }) => item.recordId)).toEqual(ids.slice(30));
  });

  it('is computed for a deleted record too, which a restore then shows', async () => {
    const fields = DEAL.filter((field) => field.type !== 'formula');
    const { editor, workspaceId, object } = await setup(fields);
    await indexBuilder(object.id).hold();
    const made = await createOne(editor.key, object.id, [fv('title', 'gone'), fv('amount', 4), fv('quantity', 5)]);
    const path = `/workspaces/${workspaceId}/records/${made.id}`;
    expect((await call('DELETE', path, { key: editor.key })).status).toBe(200);
    const total = { name: 'total', type: 'formula', expression: 'amount * quantity', resultType: 'number' };
    const put = { name: 'Deal', nameTemplate: '{title}', workspaceIds: [workspaceId], fields: [...fields, total] };
    expect((await admin('PUT', `/admin/objects/${object.id}`, put)).status).toBe(200);
    await computeAll(object.id);
    const computed = await stored(made.id);
    expect(computed).toEqual({ values: expect.objectContaining({ total: 20 }), version: 3 });
    const restored = await call('POST', `${path}/restore`, { key: editor.key });
    expect(restored.status).toBe(200);
    expect(valuesOf(restored.body)).toMatchObject({ total: 20 });
    expect(restored.body.version).toBe(4);
  });
});
