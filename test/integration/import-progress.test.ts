import { env } from 'cloudflare:workers';
import { describe, expect, it, vi } from 'vitest';
import {
  admin,
  call,
  download,
  errorLines,
  expectProblem,
  finished,
  fv,
  holdNextImport,
  importObject,
  objectIn,
  upload,
} from './helpers.ts';

/**
 * Imports a person can trust: a status that says what happened to the rows, progress to show,
 * a list to find them again, row errors that name their column, rows checked as the create
 * elements they are, and an export whose cost is told.
 */

const FIELDS = [
  { name: 'symbol', type: 'text', required: true },
  { name: 'date', type: 'date' },
  { name: 'price', type: 'number' },
];

const setup = () => objectIn({ name: 'Stock', nameTemplate: '{symbol}', fields: FIELDS });

async function recordCount(objectId: number): Promise<number> {
  const row = await env.DB.prepare('SELECT count(*) AS n FROM records WHERE object_id = ?')
    .bind(objectId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

describe('an import whose rows all fail says so', () => {
  it('560 rows that all fail end failed, with the most common problem and its column', async () => {
    const { editor, workspaceId, object } = await setup();
    const rows = Array.from({ length: 560 }, (_, i) => `MSFT,Jan ${(i % 28) + 1} 2000,${i}.5`);
    const csv = `symbol,date,price\n${rows.join('\n')}\n`;
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, csv, 'text/csv');
    const done = await finished(editor.key, answer.body.id);
    expect(done).toMatchObject({
      status: 'failed',
      rows: { processed: 560, created: 0, failed: 560, total: 560 },
      failure:
        'All 560 rows failed. Most common problem (560 of them): expected a calendar date YYYY-MM-DD ' +
        '(invalid_value) in column "date".',
    });
    expect(done.bytesRead).toBe(done.bytes);
  });

  it('a mis-mapped file whose first 1,000 rows all fail stops there, without reading the rest', async () => {
    const { editor, workspaceId, object } = await setup();
    const lines = Array.from({ length: 2500 }, (_, i) => JSON.stringify({ name: `flight ${i}`, delay: i }));
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, lines.join('\n'));
    const done = await finished(editor.key, answer.body.id);
    expect(done).toMatchObject({
      status: 'failed',
      rows: { processed: 1000, failed: 1000, total: 2500 },
      failure:
        'The first 1000 rows all failed, so the rest of the file was not read. Most common problem (1000 of them): ' +
        'not a field of the object (unknown_field) in column "name".',
    });
    expect(done.bytesRead).toBeLessThan(done.bytes);
    expect((await errorLines(editor.key, done.id)).length).toBe(1000);
  });

  it('one good row among the first 1,000 keeps it going to the end, where it succeeds', async () => {
    const { editor, workspaceId, object } = await setup();
    const lines = Array.from({ length: 1200 }, (_, i) =>
      JSON.stringify({ fieldValues: [fv('symbol', 'X'), fv('price', i === 999 ? 1 : 'n/a')] }),
    );
    const done = await finished(
      editor.key,
      (await upload(editor.key, workspaceId, `objectId=${object.id}`, lines.join('\n'))).body.id,
    );
    expect(done).toMatchObject({ status: 'succeeded', rows: { processed: 1200, created: 1, failed: 1199 } });
    expect(done.failure).toBeUndefined();
  });
});

describe('progress a person can show', () => {
  it('knows the rows of its file from the start, and how many bytes of it are applied', async () => {
    const { editor, workspaceId, object } = await setup();
    const next = await holdNextImport();
    // 250 data rows; a quoted line break and blank lines are no rows of their own.
    const rows = Array.from({ length: 250 }, (_, i) => (i === 7 ? `"two\nlines",,${i}` : `S${i},,${i}`));
    const csv = `symbol,date,price\r\n\r\n${rows.join('\r\n')}\r\n\r\n`;
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}`, csv, 'text/csv');
    expect(answer.body).toMatchObject({ id: next, rows: { processed: 0, total: 250 }, bytesRead: 19 });
    expect(answer.body.bytes).toBe(new TextEncoder().encode(csv).byteLength);
    expect(await importObject(next).stepOnce(next)).toEqual({ more: true });
    const midway = (await call('GET', `/imports/${next}`, { key: editor.key })).body;
    expect(midway).toMatchObject({ status: 'running', rows: { processed: 100, created: 100, total: 250 } });
    expect(midway.bytesRead).toBeGreaterThan(19);
    expect(midway.bytesRead).toBeLessThan(midway.bytes);
    while ((await importObject(next).stepOnce(next)).more);
    const done = (await call('GET', `/imports/${next}`, { key: editor.key })).body;
    expect(done).toMatchObject({ status: 'succeeded', rows: { processed: 250, created: 250, total: 250 } });
    expect(done.bytesRead).toBe(done.bytes);
  });
});

describe("a person's imports can be found again", () => {
  it("lists the caller's imports into the workspace, newest first, a signed page at a time", async () => {
    const { editor, viewer, stranger, workspaceId, object } = await setup();
    const mine: number[] = [];
    for (let i = 0; i < 5; i++)
      mine.push((await upload(editor.key, workspaceId, `objectId=${object.id}`, `{"fieldValues":[]}\n`)).body.id);
    const other = await setup();
    await upload(other.editor.key, other.workspaceId, `objectId=${other.object.id}`, `{"fieldValues":[]}\n`);
    const path = `/workspaces/${workspaceId}/imports`;
    const first = await call('GET', `${path}?limit=2`, { key: editor.key });
    expect(first.status).toBe(200);
    expect(first.body.items.map((i: { id: number }) => i.id)).toEqual([mine[4], mine[3]]);
    expect(first.body.items[0]).toMatchObject({ workspaceId, objectId: object.id, mode: 'create', format: 'ndjson' });
    const seen = [...first.body.items];
    for (let cursor = first.body.nextCursor; cursor !== null;) {
      const page = await call('GET', `${path}?limit=2&cursor=${encodeURIComponent(cursor)}`, { key: editor.key });
      seen.push(...page.body.items);
      cursor = page.body.nextCursor;
    }
    expect(seen.map((i) => i.id)).toEqual([...mine].reverse());
    // Another member sees only their own (none); a stranger and a forged cursor are refused.
    expect((await call('GET', path, { key: viewer.key })).body).toEqual({ items: [], nextCursor: null });
    expectProblem(await call('GET', path, { key: stranger.key }), 404, 'not_found');
    expectProblem(
      await call('GET', `${path}?cursor=${first.body.nextCursor}x`, { key: editor.key }),
      400,
      'invalid_request',
    );
    expectProblem(await call('GET', `${path}?limit=0`, { key: editor.key }), 400, 'invalid_request');
    expectProblem(await call('GET', path), 401, 'unauthorized');
    for (const id of mine) await finished(editor.key, id);
  });

  it("an administrator of the tenant, a member of the workspace, lists everyone's imports into it", async () => {
    const { editor, workspaceId, object } = await setup();
    const editors = (await upload(editor.key, workspaceId, `objectId=${object.id}`, `{"fieldValues":[]}\n`)).body.id;
    const user = await admin('POST', '/admin/users', { name: 'Boss', admin: true });
    const key = (await admin('POST', `/admin/users/${user.body.id}/keys`)).body.key as string;
    const path = `/workspaces/${workspaceId}/imports`;
    // Not a member: the workspace is not theirs to read.
    expectProblem(await call('GET', path, { key }), 404, 'not_found');
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${user.body.id}`, { role: 'viewer' });
    const own = (await upload(key, workspaceId, `objectId=${object.id}`, `{"fieldValues":[]}\n`)).status;
    expect(own).toBe(403); // a viewer imports nothing
    const listed = await call('GET', path, { key });
    expect(listed.body.items.map((i: { id: number }) => i.id)).toEqual([editors]);
    // The editor, no administrator, still sees only their own.
    expect((await call('GET', path, { key: editor.key })).body.items.map((i: { id: number }) => i.id)).toEqual([
      editors,
    ]);
    await finished(editor.key, editors);
  });
});

describe('row errors a person can act on, and rows checked as the create elements they are', () => {
  it("a CSV row's error names its column beside the pointer into the row", async () => {
    const { editor, workspaceId, object } = await setup();
    const csv = 'price,date,symbol\r\n,,A\r\nhigh,2024-02-30,B\r\n';
    const done = await finished(
      editor.key,
      (await upload(editor.key, workspaceId, `objectId=${object.id}`, csv, 'text/csv')).body.id,
    );
    expect(await errorLines(editor.key, done.id)).toEqual([
      {
        row: 2,
        errors: [
          {
            pointer: '/fieldValues/0/value',
            column: 'price',
            value: 'high',
            code: 'invalid_type',
            message: 'expected number',
          },
          {
            pointer: '/fieldValues/1/value',
            column: 'date',
            value: '2024-02-30',
            code: 'invalid_value',
            message: 'expected a calendar date YYYY-MM-DD',
          },
        ],
      },
    ]);
  });

  it('a member twice, a lone surrogate, a number no double holds, too deep: a row error (a batch: 400)', async () => {
    const { editor, workspaceId, object } = await setup();
    const deep = `${'['.repeat(97)}${']'.repeat(97)}`;
    const elements = [
      '{"fieldValues":[{"fieldName":"symbol","value":"A"}],"fieldValues":[{"fieldName":"symbol","value":"B"}]}',
      '{"fieldValues":[{"fieldName":"symbol","value":"\\ud800"}]}',
      '{"fieldValues":[{"fieldName":"symbol","value":"C"},{"fieldName":"price","value":1e400}]}',
      '{"fieldValues":[{"fieldName":"symbol","value":"D"},{"fieldName":"price","value":9007199254740993}]}',
      `{"fieldValues":[{"fieldName":"symbol","value":"E"},{"fieldName":"price","value":${deep}}]}`,
    ];
    const done = await finished(
      editor.key,
      (await upload(editor.key, workspaceId, `objectId=${object.id}`, elements.join('\n'))).body.id,
    );
    expect(done).toMatchObject({ status: 'failed', rows: { processed: 5, failed: 5, created: 0 } });
    expect(await recordCount(object.id)).toBe(0);
    const listed = await errorLines(editor.key, done.id);
    const codes = listed.map((line) => line.errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code]));
    expect(codes).toEqual([
      [['/fieldValues', 'duplicate']],
      [['/fieldValues/0/value', 'invalid_string']],
      [['/fieldValues/1/value', 'invalid_number']],
      [['/fieldValues/1/value', 'invalid_number']],
      // The row is three levels; 96 of the value's 97 are entered before the 100th is refused.
      [[`/fieldValues/1/value${'/0'.repeat(96)}`, 'too_deep']],
    ]);
    // Each element sent to the batch API alone is refused with the same problem, at its index.
    for (const [i, element] of elements.entries()) {
      const sent = await call('POST', '/records/batch', {
        key: editor.key,
        raw: `[${element.replace('{', `{"objectId":${object.id},`)}]`,
      });
      expectProblem(sent, 400, 'invalid_request');
      expect(
        sent.body.errors.map((e: { pointer: string; code: string }) => [e.pointer.replace(/^\/0/, ''), e.code]),
      ).toEqual(codes[i]);
    }
  });
});

describe("an export's cost is told", () => {
  it('logs the rows it read and its round trips with its request id once the download ends', async () => {
    const { editor, workspaceId, object } = await setup();
    const lines = Array.from({ length: 450 }, (_, i) => JSON.stringify({ fieldValues: [fv('symbol', `S${i}`)] }));
    await finished(
      editor.key,
      (await upload(editor.key, workspaceId, `objectId=${object.id}`, lines.join('\n'))).body.id,
    );
    const log = vi.spyOn(console, 'log');
    try {
      const res = await download(
        editor.key,
        `/workspaces/${workspaceId}/records/export?objectId=${object.id}&format=csv`,
      );
      const requestId = res.headers.get('X-Request-Id');
      expect((await res.text()).split('\r\n')).toHaveLength(452);
      const ended = log.mock.calls
        .map(([line]) => (typeof line === 'string' && line.startsWith('{') ? JSON.parse(line) : undefined))
        .find((entry) => entry?.message === 'export ended' && entry.requestId === requestId);
      expect(ended).toMatchObject({ outcome: 'complete', records: 450 });
      // Three pages of 200 (and the caller, unless the isolate knows them); at least a row read per record.
      expect(Number(/desc="(\d+) round trips"/.exec(ended.serverTiming)?.[1])).toBeGreaterThanOrEqual(3);
      expect(Number(/(\d+) read/.exec(ended.serverTiming)?.[1])).toBeGreaterThanOrEqual(450);
    } finally {
      log.mockRestore();
    }
  });
});
