import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import {
  admin,
  bulkRecords,
  call,
  createOne,
  download,
  errorLines,
  expectProblem,
  finished,
  holdNextImport,
  importObject,
  newUser,
  newWorkspace,
  type Answer,
  fv,
  objectIn,
  upload,
} from './helpers.ts';

const FIELDS = [
  { name: 'first', type: 'text', required: true },
  { name: 'last', type: 'text' },
  { name: 'age', type: 'integer' },
  { name: 'vip', type: 'boolean' },
  { name: 'tags', type: 'multiSelect', options: ['a', 'b', 'c'] },
  { name: 'email', type: 'email', unique: true },
];

const setup = () => objectIn({ name: 'Person', nameTemplate: '{first} {last}', fields: FIELDS });

async function records(objectId: number) {
  const rows = await env.DB.prepare(
    'SELECT id, name, field_values, creation_type, created_by FROM records WHERE object_id = ? ORDER BY id',
  )
    .bind(objectId)
    .all<{ id: number; name: string; field_values: string; creation_type: string; created_by: number }>();
  return rows.results;
}

describe('imports: NDJSON and CSV files applied in the background', () => {
  it('an NDJSON file creates System records by the importer; bad rows are skipped and listed', async () => {
    const { editor, workspaceId, object } = await setup();
    const lines = [
      JSON.stringify({ fieldValues: [fv('first', 'Ada'), fv('last', 'Lovelace'), fv('age', 36)] }),
      JSON.stringify({ fieldValues: [fv('first', 'Bad'), fv('age', 'old')] }),
      '',
      'not json',
      JSON.stringify({ fieldValues: [fv('first', 'Grace'), fv('email', 'g@example.com')], isTemplate: true }),
    ];
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, lines.join('\n'));
    expect(answer.status).toBe(202);
    expect(answer.headers.get('Location')).toBe(`/imports/${answer.body.id}`);
    expect(answer.body).toMatchObject({
      workspaceId,
      objectId: object.id,
      mode: 'create',
      format: 'ndjson',
      status: 'queued',
    });
    const done = await finished(editor.key, answer.body.id);
    expect(done).toMatchObject({
      status: 'succeeded',
      rows: { processed: 4, created: 2, updated: 0, unchanged: 0, failed: 2, total: 4 },
    });
    expect(done.finishedAt).toBeGreaterThanOrEqual(done.createdAt);
    const made = await records(object.id);
    expect(made.map((r) => [r.name, r.creation_type, r.created_by])).toEqual([
      ['Ada Lovelace', 'System', editor.id],
      ['Grace', 'System', editor.id],
    ]);
    expect(await errorLines(editor.key, answer.body.id)).toEqual([
      {
        row: 2,
        errors: [
          {
            pointer: '/fieldValues/1/value',
            column: 'age',
            value: 'old',
            code: 'invalid_type',
            message: 'expected integer',
          },
        ],
      },
      { row: 3, errors: [{ pointer: '', code: 'invalid_row', message: 'the line is not JSON' }] },
    ]);
    // The feed shows them as any create.
    const feed = await call('GET', `/workspaces/${workspaceId}/changes`, { key: editor.key });
    expect(
      feed.body.items.filter((c: { type: string }) => c.type === 'created').map((c: any) => c.record.name),
    ).toEqual(['Ada Lovelace', 'Grace']);
  });

  it("a CSV file with quotes, commas, CRLF and empty cells is read by its header and the fields' types", async () => {
    const { editor, workspaceId, object } = await setup();
    const csv =
      'first,last,age,vip,tags\r\n' +
      '"Lovelace, Ada","The ""Countess""",36,true,a;b\r\n' +
      'Grace,"Hopper\r\nRear Admiral",,false,"[""c""]"\r\n' +
      'Alan,Turing,41,maybe,\r\n' +
      'Only,two\r\n' +
      'Last,Line,7,,';
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, csv, 'text/csv; charset=utf-8');
    expect(answer.status).toBe(202);
    const done = await finished(editor.key, answer.body.id);
    expect(done.rows).toEqual({ processed: 5, created: 3, updated: 0, unchanged: 0, failed: 2, total: 5 });
    const made = (await records(object.id)).map((r) => JSON.parse(r.field_values));
    expect(made).toEqual([
      [
        fv('first', 'Lovelace, Ada'),
        fv('last', 'The "Countess"'),
        fv('age', 36),
        fv('vip', true),
        fv('tags', ['a', 'b']),
      ],
      [fv('first', 'Grace'), fv('last', 'Hopper\r\nRear Admiral'), fv('vip', false), fv('tags', ['c'])],
      [fv('first', 'Last'), fv('last', 'Line'), fv('age', 7)],
    ]);
    expect((await errorLines(editor.key, answer.body.id)).map((e) => [e.row, e.errors[0].code])).toEqual([
      [3, 'invalid_type'],
      [4, 'invalid_row'],
    ]);
  });
});

describe('imports: what is refused at once', () => {
  it('a file not NDJSON or CSV of the object, a wrong type, a viewer, a stranger: refused at once', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const stranger = await newUser('stranger');
    const q = `objectId=${object.id}`;
    const before = await env.DB.prepare('SELECT count(*) AS n FROM imports').first();
    const files = (await env.IMPORT_FILES.list()).objects.length;
    const cases: [Answer, number, string][] = [
      [await upload(editor.key, workspaceId, q, '[1,2]\n'), 400, 'invalid_request'],
      [await upload(editor.key, workspaceId, q, 'hello\n'), 400, 'invalid_request'],
      [await upload(editor.key, workspaceId, q, '\n\n'), 400, 'invalid_request'],
      [await upload(editor.key, workspaceId, q, 'first,nope\r\nA,B\r\n', 'text/csv'), 400, 'invalid_request'],
      [await upload(editor.key, workspaceId, q, 'first,"a\r\n', 'text/csv'), 400, 'invalid_request'],
      [await upload(editor.key, workspaceId, q, '{}', 'application/json'), 415, 'unsupported_media_type'],
      [await upload(editor.key, workspaceId, q, '{}', 'text/csv; charset=latin1'), 415, 'unsupported_media_type'],
      [await upload(editor.key, workspaceId, 'objectId=x', '{}\n'), 400, 'invalid_request'],
      [await upload(editor.key, workspaceId, `${q}&mode=upsert&matchOn=first`, '{}\n'), 400, 'invalid_request'],
      [await upload(editor.key, workspaceId, `${q}&mode=upsert`, '{}\n'), 400, 'invalid_request'],
      [await upload(viewer.key, workspaceId, q, '{}\n'), 403, 'forbidden'],
      [await upload(stranger.key, workspaceId, q, '{}\n'), 404, 'not_found'],
      [await upload(editor.key, workspaceId, 'objectId=999999', '{}\n'), 404, 'not_found'],
    ];
    for (const [answer, status, code] of cases) expectProblem(answer, status, code);
    expect(cases[3]?.[0].body.errors).toEqual([
      {
        pointer: '/columns/1',
        column: 'nope',
        code: 'unknown_field',
        message: 'column "nope" is not a field of the object',
      },
    ]);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM imports').first()).toEqual(before);
    expect((await env.IMPORT_FILES.list()).objects).toHaveLength(files);
  });

  it("an import is its importer's alone: another member reads 404", async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, '{"fieldValues":[]}\n');
    expect(answer.status).toBe(202);
    expectProblem(await call('GET', `/imports/${answer.body.id}`, { key: viewer.key }), 404, 'not_found');
    expectProblem(await call('DELETE', `/imports/${answer.body.id}`, { key: viewer.key }), 404, 'not_found');
    expectProblem(await call('GET', `/imports/${answer.body.id}/errors`, { key: viewer.key }), 404, 'not_found');
    await finished(editor.key, answer.body.id);
  });
});

describe('imports: upsert', () => {
  it("patches the record holding each row's unique value, creates the others, counts unchanged rows", async () => {
    const { editor, workspaceId, object } = await setup();
    const ada = await createOne(editor.key, object.id, [
      fv('first', 'Ada'),
      fv('email', 'ada@example.com'),
      fv('age', 36),
    ]);
    const alan = await createOne(editor.key, object.id, [fv('first', 'Alan'), fv('email', 'alan@example.com')]);
    const csv =
      'email,age,first\r\n' +
      'ADA@example.com,37,Ada\r\n' +
      'alan@example.com,,Alan\r\n' +
      'grace@example.com,85,Grace\r\n' +
      ',1,Nobody\r\n' +
      'grace@example.com,86,Grace\r\n';
    const answer = await upload(
      editor.key,
      workspaceId,
      `objectId=${object.id}&mode=upsert&matchOn=email`,
      csv,
      'text/csv',
    );
    expect(answer.status).toBe(202);
    const done = await finished(editor.key, answer.body.id);
    expect(done.rows).toEqual({ processed: 5, created: 1, updated: 2, unchanged: 1, failed: 1, total: 5 });
    const read = await call('GET', `/records/${ada.id}`, { key: editor.key });
    // Matched whatever the case (as unique emails compare), and patched with the value sent.
    expect(read.body.fieldValues).toEqual([fv('first', 'Ada'), fv('age', 37), fv('email', 'ADA@example.com')]);
    expect(read.body.version).toBe(2);
    expect((await call('GET', `/records/${alan.id}`, { key: editor.key })).body.version).toBe(1);
    const graces = (await records(object.id)).filter((r) => r.name === 'Grace');
    expect(graces).toHaveLength(1);
    expect(JSON.parse(graces[0]?.field_values ?? '[]')).toContainEqual(fv('age', 86));
    expect((await errorLines(editor.key, answer.body.id)).map((e) => [e.row, e.errors[0].code])).toEqual([
      [4, 'required'],
    ]);
  });
});

describe('imports: exactly once through lost replies, restarts and cancels', () => {
  it('a chunk whose reply is lost after it committed is not applied again: every row once, counts exact', async () => {
    const { editor, workspaceId, object } = await setup();
    // Held before it is created: the object of the import to come takes no alarm of its own.
    const next = await holdNextImport();
    const lines = Array.from({ length: 250 }, (_, i) =>
      JSON.stringify({ fieldValues: [fv('first', `P${i}`), fv('age', i % 50 === 7 ? 'x' : i)] }),
    );
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, lines.join('\n'));
    expect(answer.body.id).toBe(next);
    const stub = importObject(next);
    // Chunk 1 commits and its reply is lost; run again, it finds the import moved and goes on.
    expect(await stub.stepOnce(next, true)).toEqual({ more: true, error: 'Error: Network connection lost.' });
    expect(await stub.stepOnce(next)).toEqual({ more: true });
    // Chunk 2 the same, twice over.
    expect((await stub.stepOnce(next, true)).error).toBeDefined();
    expect((await stub.stepOnce(next, true)).error).toBeDefined();
    expect(await stub.stepOnce(next)).toEqual({ more: true });
    expect(await stub.stepOnce(next)).toEqual({ more: false });
    const done = (await call('GET', `/imports/${next}`, { key: editor.key })).body;
    expect(done).toMatchObject({ status: 'succeeded', rows: { processed: 250, created: 245, failed: 5 } });
    const names = (await records(object.id)).map((r) => r.name);
    expect(names).toHaveLength(245);
    expect(new Set(names).size).toBe(245);
    expect((await errorLines(editor.key, next)).map((e) => e.row)).toEqual([8, 58, 108, 158, 208]);
    const changes = await env.DB.prepare(
      `SELECT count(*) AS n FROM changes c JOIN records r ON r.id = c.record_id
       WHERE r.object_id = ? AND c.type = 'created'`,
    )
      .bind(object.id)
      .first();
    expect(changes).toEqual({ n: 245 });
    // Its file is gone once it finished.
    expect((await env.IMPORT_FILES.list()).objects.map((o) => o.key)).not.toContain(
      (await env.DB.prepare('SELECT file FROM imports WHERE id = ?').bind(next).first<{ file: string }>())?.file,
    );
  });

  it('a cancelled import takes no more chunks; the rows applied stay', async () => {
    const { editor, workspaceId, object } = await setup();
    const next = await holdNextImport();
    const lines = Array.from({ length: 300 }, (_, i) => JSON.stringify({ fieldValues: [fv('first', `C${i}`)] }));
    await upload(editor.key, workspaceId, `objectId=${object.id}`, lines.join('\n'));
    expect(await importObject(next).stepOnce(next)).toEqual({ more: true });
    const cancelled = await call('DELETE', `/imports/${next}`, { key: editor.key });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', rows: { processed: 100, created: 100 } });
    expect(await importObject(next).stepOnce(next)).toEqual({ more: false });
    expect(await records(object.id)).toHaveLength(100);
    // Cancelling again answers the same; an import that finished has nothing to cancel.
    expect((await call('DELETE', `/imports/${next}`, { key: editor.key })).body.status).toBe('cancelled');
  });

  it('an Idempotency-Key sent again answers the same import; with another file it is refused', async () => {
    const { editor, workspaceId, object } = await setup();
    const file = `${JSON.stringify({ fieldValues: [fv('first', 'Once')] })}\n`;
    const headers = { 'Idempotency-Key': 'import-once' };
    const first = await upload(editor.key, workspaceId, `objectId=${object.id}`, file, 'application/x-ndjson', headers);
    const again = await upload(editor.key, workspaceId, `objectId=${object.id}`, file, 'application/x-ndjson', headers);
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    const other = await upload(
      editor.key,
      workspaceId,
      `objectId=${object.id}`,
      `${file}\n{}`,
      'application/x-ndjson',
      headers,
    );
    expectProblem(other, 422, 'unprocessable');
    expect(other.body.errors[0].code).toBe('idempotency_key_reused');
    await finished(editor.key, first.body.id);
    expect((await records(object.id)).map((r) => r.name)).toEqual(['Once']);
    expectProblem(await call('DELETE', `/imports/${first.body.id}`, { key: editor.key }), 409, 'conflict');
  });

  it('rows that D1 refuses (a unique value held, a reference not allowed) are listed; the chunk goes on', async () => {
    const { editor, workspaceId, object } = await setup();
    await createOne(editor.key, object.id, [fv('first', 'Held'), fv('email', 'held@example.com')]);
    const lines = [
      { fieldValues: [fv('first', 'A'), fv('email', 'a@example.com')] },
      { fieldValues: [fv('first', 'B'), fv('email', 'HELD@example.com')] },
      { fieldValues: [fv('first', 'C'), fv('email', 'a@example.com')] },
      { fieldValues: [fv('first', 'D')] },
    ].map((line) => JSON.stringify(line));
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, lines.join('\n'));
    const done = await finished(editor.key, answer.body.id);
    expect(done.rows).toEqual({ processed: 4, created: 2, updated: 0, unchanged: 0, failed: 2, total: 4 });
    expect((await records(object.id)).map((r) => r.name)).toEqual(['Held', 'A', 'D']);
    expect(await errorLines(editor.key, answer.body.id)).toEqual([
      {
        row: 2,
        errors: [
          {
            pointer: '/fieldValues/1',
            column: 'email',
            value: 'HELD@example.com',
            code: 'unique_violation',
            message: 'another live record holds this value',
          },
        ],
      },
      {
        row: 3,
        errors: [
          {
            pointer: '/fieldValues/1',
            column: 'email',
            value: 'a@example.com',
            code: 'unique_violation',
            message: 'another element of this request holds this value',
          },
        ],
      },
    ]);
  });
});

describe('exports', () => {
  it('streams every live record in id order, NDJSON as reads show them and CSV a column per field', async () => {
    const { editor, viewer, workspaceId, object } = await setup();
    const a = await createOne(editor.key, object.id, [
      fv('first', 'Ada, "the first"'),
      fv('tags', ['a', 'c']),
      fv('age', 36),
    ]);
    const b = await createOne(editor.key, object.id, [fv('first', 'Line\nbreak'), fv('vip', true)]);
    const gone = await createOne(editor.key, object.id, [fv('first', 'Gone')]);
    await call('DELETE', `/workspaces/${workspaceId}/records/${gone.id}`, { key: editor.key });
    const ndjson = await download(viewer.key, `/workspaces/${workspaceId}/records/export?objectId=${object.id}`);
    expect(ndjson.status).toBe(200);
    expect(ndjson.headers.get('Content-Type')).toBe('application/x-ndjson');
    expect(ndjson.headers.get('Content-Disposition')).toBe(
      `attachment; filename="records-${workspaceId}-${object.id}.ndjson"`,
    );
    const lines = (await ndjson.text())
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual([a, b]);
    const csv = await download(
      viewer.key,
      `/workspaces/${workspaceId}/records/export?objectId=${object.id}&format=csv`,
    );
    expect(csv.headers.get('Content-Type')).toBe('text/csv; charset=utf-8');
    expect(await csv.text()).toBe(
      'id,name,version,updatedAt,first,last,age,vip,tags,email\r\n' +
        `${a.id},"Ada, ""the first""",1,${a.updatedAt},"Ada, ""the first""",,36,,"[""a"",""c""]",\r\n` +
        `${b.id},"Line\nbreak",1,${b.updatedAt},"Line\nbreak",,,true,,\r\n`,
    );
    const refused = await call('GET', `/workspaces/${workspaceId}/records/export?objectId=${object.id}&format=xml`, {
      key: viewer.key,
    });
    expectProblem(refused, 400, 'invalid_request');
    const stranger = await newUser('stranger');
    expectProblem(
      await call('GET', `/workspaces/${workspaceId}/records/export?objectId=${object.id}`, { key: stranger.key }),
      404,
      'not_found',
    );
  });

  it('an export of more records than one page while they change shows each once', async () => {
    const { editor, workspaceId, object } = await setup();
    await bulkRecords(object.id, workspaceId, 450, `json_array(json_object('fieldName', 'first', 'value', 'N' || i))`);
    const ids = (await records(object.id)).map((r) => r.id);
    const res = await download(editor.key, `/workspaces/${workspaceId}/records/export?objectId=${object.id}`);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const first = await reader.read();
    text += decoder.decode(first.value);
    // Between pages: a record already sent and one not yet sent change, and one more is created.
    const sent = ids[0] as number;
    const later = ids[400] as number;
    for (const id of [sent, later])
      expect(
        (
          await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
            key: editor.key,
            body: { fieldValues: [fv('age', 1)] },
          })
        ).status,
      ).toBe(200);
    const added = await createOne(editor.key, object.id, [fv('first', 'Added')]);
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      text += decoder.decode(next.value);
    }
    const exported = text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(exported.map((r) => r.id)).toEqual([...ids, added.id]);
    expect(exported.find((r) => r.id === later).version).toBe(2);
    expect(exported.find((r) => r.id === sent).version).toBe(1);
  });
});

describe('imports check references as every write does', () => {
  it('a row naming a record the importer may not reference is listed as invalid_reference; others go in', async () => {
    const { editor, workspaceId, object } = await setup();
    const outsider = await newUser('outsider');
    const other = await newWorkspace({ [outsider.id]: 'editor' });
    const company = (
      await admin('POST', '/admin/objects', {
        name: 'Company',
        workspaceIds: [workspaceId, other],
        fields: [{ name: 'title', type: 'text' }],
      })
    ).body;
    const lonely = (
      await admin('POST', '/admin/objects', {
        name: 'Hidden',
        workspaceIds: [other],
        fields: [{ name: 't', type: 'text' }],
      })
    ).body;
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
    const hidden = await createOne(outsider.key, lonely.id, [fv('t', 'x')]);
    const current = (await admin('GET', `/admin/objects/${object.id}`)).body;
    const { id: _id, version: _version, ...input } = current;
    await admin('PUT', `/admin/objects/${object.id}`, {
      ...input,
      fields: [...input.fields, { name: 'company', type: 'reference', target: company.id }],
    });
    const csv = `first,company\r\nA,${acme.id}\r\nB,${hidden.id}\r\nC,999999\r\nD,${acme.id}\r\n`;
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, csv, 'text/csv');
    const done = await finished(editor.key, answer.body.id);
    expect(done.rows).toEqual({ processed: 4, created: 2, updated: 0, unchanged: 0, failed: 2, total: 4 });
    const message = `expected the id of a live record of object ${company.id} that you can read`;
    expect(await errorLines(editor.key, answer.body.id)).toEqual([
      {
        row: 2,
        errors: [
          {
            pointer: '/fieldValues/1/value',
            code: 'invalid_reference',
            message,
            column: 'company',
            value: String(hidden.id),
          },
        ],
      },
      {
        row: 3,
        errors: [
          { pointer: '/fieldValues/1/value', code: 'invalid_reference', message, column: 'company', value: '999999' },
        ],
      },
    ]);
    const refs = await env.DB.prepare(
      'SELECT r.name FROM record_refs x JOIN records r ON r.id = x.record_id WHERE x.target_id = ? ORDER BY r.id',
    )
      .bind(acme.id)
      .all();
    expect(refs.results).toEqual([{ name: 'A' }, { name: 'D' }]);
  });
});

describe('imports: edge cases from a review', () => {
  it('a CSV file of its header alone succeeds with no rows; a bad byte fails its row only', async () => {
    const { editor, workspaceId, object } = await setup();
    const empty = await upload(editor.key, workspaceId, `objectId=${object.id}`, 'first,last\r\n', 'text/csv');
    expect(empty.status).toBe(202);
    expect(await finished(editor.key, empty.body.id)).toMatchObject({ status: 'succeeded', rows: { processed: 0 } });
    const { exports } = await import('cloudflare:workers');
    const bytes = new Uint8Array([
      ...new TextEncoder().encode('first,last\r\nA,B\r\n'),
      0xff,
      ...new TextEncoder().encode(',C\r\nD,"E\r\nF"\r\n'),
    ]);
    const res = await exports.default.fetch(
      `http://records.test/workspaces/${workspaceId}/imports?objectId=${object.id}`,
      {
        method: 'POST',
        headers: { Authorization: `Bearer ${editor.key}`, 'Content-Type': 'text/csv' },
        body: bytes,
      },
    );
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: number };
    expect((await finished(editor.key, id)).rows).toEqual({
      processed: 3,
      created: 2,
      updated: 0,
      unchanged: 0,
      failed: 1,
      total: 3,
    });
    expect(await errorLines(editor.key, id)).toEqual([
      { row: 2, errors: [{ pointer: '', code: 'invalid_encoding', message: 'the record is not UTF-8' }] },
    ]);
    expect((await records(object.id)).map((r) => r.name)).toEqual(['A B', 'D E\r\nF']);
  });

  it('a first NDJSON line longer than what is read first is taken, and checked as a row', async () => {
    const { editor, workspaceId, object } = await setup();
    const long = JSON.stringify({ fieldValues: [fv('first', 'x'.repeat(1_200_000))] });
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, `${long}\n{"fieldValues":[]}\n`);
    expect(answer.status).toBe(202);
    const done = await finished(editor.key, answer.body.id);
    expect(done.rows).toMatchObject({ processed: 2, failed: 2 });
    expect((await errorLines(editor.key, answer.body.id)).map((e) => e.errors[0].code)).toEqual([
      'invalid_value',
      'required',
    ]);
  });

  it('an import whose importer may no longer write fails, and says why', async () => {
    const { editor, workspaceId, object } = await setup();
    const next = await holdNextImport();
    await upload(
      editor.key,
      workspaceId,
      `objectId=${object.id}`,
      '{"fieldValues":[{"fieldName":"first","value":"A"}]}\n',
    );
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${editor.id}`, { role: 'viewer' });
    expect(await importObject(next).stepOnce(next)).toEqual({ more: false });
    const state = (await call('GET', `/imports/${next}`, { key: editor.key })).body;
    expect(state).toMatchObject({ status: 'failed', failure: 'The importer is no longer an editor of the workspace.' });
    expect(await records(object.id)).toEqual([]);
  });

  it('an export refuses a parameter given twice', async () => {
    const { editor, workspaceId, object } = await setup();
    const answer = await call(
      'GET',
      `/workspaces/${workspaceId}/records/export?objectId=${object.id}&objectId=${object.id}`,
      { key: editor.key },
    );
    expectProblem(answer, 400, 'invalid_request');
    expect(answer.body.errors).toMatchObject([{ query: 'objectId', code: 'duplicate' }]);
  });
});

describe('imports: chunks stay bounded', () => {
  it('a chunk stops at 2 MiB of rows past its first: rows near the record limit go in a few at a time', async () => {
    const { editor, workspaceId } = await setup();
    const big = (
      await admin('POST', '/admin/objects', {
        name: 'Big',
        workspaceIds: [workspaceId],
        nameTemplate: '{n}',
        fields: ['n', 'a', 'b', 'c', 'd', 'e'].map((name) => ({ name, type: 'text' })),
      })
    ).body;
    const next = await holdNextImport();
    // A first row of 3 MB (refused: its text is too long), read with what follows it; then rows of 450 KB.
    const huge = JSON.stringify({ fieldValues: [fv('n', 'huge'), fv('a', 'a'.repeat(3_000_000))] });
    const lines = Array.from({ length: 8 }, (_, i) =>
      JSON.stringify({
        fieldValues: [fv('n', `B${i}`), ...['a', 'b', 'c', 'd', 'e'].map((f) => fv(f, f.repeat(90_000)))],
      }),
    );
    const answer = await upload(editor.key, workspaceId, `objectId=${big.id}`, [huge, ...lines].join('\n'));
    expect(answer.status).toBe(202);
    expect(await importObject(next).stepOnce(next)).toEqual({ more: true });
    expect((await call('GET', `/imports/${next}`, { key: editor.key })).body.rows).toMatchObject({
      processed: 1,
      failed: 1,
    });
    let steps = 1;
    for (;;) {
      steps += 1;
      const step = await importObject(next).stepOnce(next);
      expect(step.error).toBeUndefined();
      if (!step.more) break;
    }
    expect(steps).toBeGreaterThanOrEqual(4);
    const done = (await call('GET', `/imports/${next}`, { key: editor.key })).body;
    expect(done).toMatchObject({ status: 'succeeded', rows: { processed: 9, created: 8, failed: 1 } });
    expect((await records(big.id)).map((r) => r.name)).toEqual(lines.map((_, i) => `B${i}`));
  });
});
