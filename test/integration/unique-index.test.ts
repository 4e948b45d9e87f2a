import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call, createOne, expectProblem, newUser, newWorkspace, untilIndexBuilt } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

const FIELDS = [
  { name: 'code', type: 'text', unique: true },
  { name: 'score', type: 'integer', indexed: true },
  { name: 'seen', type: 'datetime', indexed: true },
  { name: 'note', type: 'text' },
];

async function setup() {
  const editor = await newUser('editor');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const definition = { name: 'Item', workspaceIds: [workspaceId], fields: FIELDS };
  const object = (await admin('POST', '/admin/objects', definition)).body;
  return { editor, workspaceId, object, definition };
}

async function indexRows(recordId: number) {
  const rows = await env.DB.prepare(
    'SELECT field, value, unique_key FROM record_index WHERE record_id = ? ORDER BY field',
  )
    .bind(recordId)
    .all();
  return rows.results;
}

describe('indexed and unique fields: the index follows every write in its transaction', () => {
  it(
    'keeps indexed values (a date-time as epoch ms), drops a removed value, clears unique keys of ' + 'deleted records',
    async () => {
      const { editor, workspaceId, object } = await setup();
      const r = await createOne(editor.key, object.id, [
        fv('code', 'AbC'),
        fv('score', 7),
        fv('seen', '2026-11-22T10:00:00+02:00'),
        fv('note', 'not indexed'),
      ]);
      expect(await indexRows(r.id)).toEqual([
        { field: 'code', value: 'AbC', unique_key: 'abc' },
        { field: 'score', value: 7, unique_key: null },
        { field: 'seen', value: Date.parse('2026-11-22T08:00:00Z'), unique_key: null },
      ]);
      const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${r.id}`, {
        key: editor.key,
        body: { fieldValues: [fv('score', 8), fv('seen', null)] },
      });
      expect(patched.status).toBe(200);
      expect(await indexRows(r.id)).toEqual([
        { field: 'code', value: 'AbC', unique_key: 'abc' },
        { field: 'score', value: 8, unique_key: null },
      ]);
      const deleted = await call('DELETE', `/workspaces/${workspaceId}/records/${r.id}`, { key: editor.key });
      expect(deleted.status).toBe(200);
      expect(await indexRows(r.id)).toEqual([
        { field: 'code', value: 'AbC', unique_key: null },
        { field: 'score', value: 8, unique_key: null },
      ]);
      // The value is free again once its holder is deleted.
      await createOne(editor.key, object.id, [fv('code', 'abc')]);
    },
  );

  it(
    'a second live record with a unique value (any case) is 409 unique_violation at its pointer; ' +
      'nothing is written',
    async () => {
      const { editor, workspaceId, object } = await setup();
      const first = await createOne(editor.key, object.id, [fv('code', 'X-1')]);
      const before = await env.DB.prepare('SELECT count(*) AS n FROM records').first<{ n: number }>();
      const clash = await call('POST', '/records/batch', {
        key: editor.key,
        body: [
          { objectId: object.id, fieldValues: [fv('code', 'fresh')] },
          { objectId: object.id, fieldValues: [fv('note', 'n'), fv('code', 'x-1')] },
        ],
      });
      expectProblem(clash, 409, 'conflict');
      expect(clash.body.errors).toEqual([
        // The caller sees the holder: it is named.
        { pointer: '/1/fieldValues/1', code: 'unique_violation', message: `record ${first.id} holds this value` },
      ]);
      const after = await env.DB.prepare('SELECT count(*) AS n FROM records').first<{ n: number }>();
      expect(after?.n).toBe(before?.n);
      // Within one request too.
      const twice = await call('POST', '/records/batch', {
        key: editor.key,
        body: [
          { objectId: object.id, fieldValues: [fv('code', 'same')] },
          { objectId: object.id, fieldValues: [fv('code', 'SAME')] },
        ],
      });
      expectProblem(twice, 409, 'conflict');
      expect(twice.body.errors[0].pointer).toBe('/1/fieldValues/0');
      // A patch that would take the value.
      const other = await createOne(editor.key, object.id, [fv('code', 'Y')]);
      const patch = await call('PATCH', `/workspaces/${workspaceId}/records/${other.id}`, {
        key: editor.key,
        body: { fieldValues: [fv('code', 'x-1')] },
      });
      expectProblem(patch, 409, 'conflict');
      expect(patch.body.errors[0].code).toBe('unique_violation');
      const read = await call('GET', `/records/${other.id}`, { key: editor.key });
      expect(read.body.fieldValues).toEqual([fv('code', 'Y')]);
      expect(read.body.version).toBe(1);
      // Patching a record with its own value is no clash.
      const own = await call('PATCH', `/workspaces/${workspaceId}/records/${first.id}`, {
        key: editor.key,
        body: { fieldValues: [fv('code', 'X-1'), fv('note', 'n')] },
      });
      expect(own.status).toBe(200);
    },
  );

  it('a holder the caller cannot see is not named', async () => {
    const { editor, object, definition } = await setup();
    await createOne(editor.key, object.id, [fv('code', 'hidden')]);
    // Shared only with the first workspace; another user edits only a second one.
    const other = await newUser('other');
    const second = await newWorkspace({ [other.id]: 'editor' });
    const widened = { ...definition, workspaceIds: [...definition.workspaceIds, second] };
    expect((await admin('PUT', `/admin/objects/${object.id}`, widened)).status).toBe(200);
    const clash = await call('POST', '/records/batch', {
      key: other.key,
      body: [{ objectId: object.id, fieldValues: [fv('code', 'HIDDEN')] }],
    });
    expectProblem(clash, 409, 'conflict');
    expect(clash.body.errors).toEqual([
      { pointer: '/0/fieldValues/0', code: 'unique_violation', message: 'another live record holds this value' },
    ]);
  });

  it('20 concurrent creates of one new value: exactly one record holds it', async () => {
    const { editor, object } = await setup();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        call('POST', '/records/batch', {
          key: editor.key,
          body: [{ objectId: object.id, fieldValues: [fv('code', 'race')] }],
        }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    for (const a of answers.filter((a) => a.status !== 201)) expectProblem(a, 409, 'conflict');
    const holders = await env.DB.prepare(
      `SELECT count(*) AS n FROM records r, json_each(r.field_values) e WHERE r.object_id = ? AND e.value ->> ` +
        `'$.value' = 'race'`,
    )
      .bind(object.id)
      .first<{ n: number }>();
    expect(holders?.n).toBe(1);
  });

  it(
    'marking a field indexed builds its index for existing records; unique while duplicates live is 409' +
      ' listing them',
    async () => {
      const { editor, object, definition } = await setup();
      const a = await createOne(editor.key, object.id, [fv('note', 'Dup')]);
      const b = await createOne(editor.key, object.id, [fv('note', 'dup')]);
      const c = await createOne(editor.key, object.id, [fv('note', 'single')]);
      const withIndexed = {
        ...definition,
        fields: FIELDS.map((f) => (f.name === 'note' ? { ...f, indexed: true } : f)),
      };
      expect((await admin('PUT', `/admin/objects/${object.id}`, withIndexed)).status).toBe(200);
      await untilIndexBuilt(object.id);
      expect(await indexRows(c.id)).toEqual([{ field: 'note', value: 'single', unique_key: null }]);
      const withUnique = { ...definition, fields: FIELDS.map((f) => (f.name === 'note' ? { ...f, unique: true } : f)) };
      const refused = await admin('PUT', `/admin/objects/${object.id}`, withUnique);
      expectProblem(refused, 409, 'conflict');
      expect(refused.body.errors).toEqual([
        {
          pointer: '/fields/3/unique',
          code: 'duplicates',
          message: `live records ${a.id}, ${b.id} hold the same value`,
        },
      ]);
      expect((await admin('GET', `/admin/objects/${object.id}`)).body.version).toBe(2);
      // A version that changes no field's indexing leaves the index as it is.
      const renamed = await admin('PUT', `/admin/objects/${object.id}`, { ...withIndexed, name: 'Renamed' });
      expect(renamed.status).toBe(200);
      expect(await indexRows(c.id)).toEqual([{ field: 'note', value: 'single', unique_key: null }]);
      // Unindexing drops its rows.
      expect((await admin('PUT', `/admin/objects/${object.id}`, definition)).status).toBe(200);
      expect(await indexRows(c.id)).toEqual([]);
    },
  );

  it('indexed and unique are refused on types that cannot hold them', async () => {
    const workspaceId = await newWorkspace();
    const answer = await admin('POST', '/admin/objects', {
      name: 'Bad',
      workspaceIds: [workspaceId],
      fields: [
        { name: 'j', type: 'json', indexed: true },
        { name: 'b', type: 'boolean', unique: true },
      ],
    });
    expectProblem(answer, 400, 'invalid_request');
    expect(answer.body.errors.map((e: any) => e.pointer)).toEqual(['/fields/0/indexed', '/fields/1/unique']);
  });
});

describe('unique values on every write path', () => {
  it(
    'a patch batch or a restore that would hold a taken value is 409 unique_violation; nothing is ' + 'written',
    async () => {
      const { editor, workspaceId, object } = await setup();
      const a = await createOne(editor.key, object.id, [fv('code', 'one')]);
      const b = await createOne(editor.key, object.id, [fv('code', 'two')]);
      const batch = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [
          { id: a.id, fieldValues: [fv('note', 'fine')] },
          { id: b.id, fieldValues: [fv('note', 'x'), fv('code', 'ONE')] },
        ],
      });
      expectProblem(batch, 409, 'conflict');
      expect(batch.body.errors).toEqual([
        { pointer: '/1/fieldValues/1', code: 'unique_violation', message: `record ${a.id} holds this value` },
      ]);
      expect((await call('GET', `/records/${a.id}`, { key: editor.key })).body.version).toBe(1);
      // A deleted holder frees the value; restoring it while another record holds it is refused.
      expect((await call('DELETE', `/workspaces/${workspaceId}/records/${a.id}`, { key: editor.key })).status).toBe(
        200,
      );
      await createOne(editor.key, object.id, [fv('code', 'One')]);
      const restore = await call('POST', `/workspaces/${workspaceId}/records/${a.id}/restore`, { key: editor.key });
      expectProblem(restore, 409, 'conflict');
      expect(restore.body.errors[0].code).toBe('unique_violation');
      expect((await call('GET', `/records/${a.id}`, { key: editor.key })).body.deleted).toBe(true);
    },
  );
});
