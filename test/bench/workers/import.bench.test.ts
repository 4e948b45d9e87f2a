import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call, newUser, newWorkspace } from '../../integration/helpers.ts';

/**
 * `npm run bench:import`: BENCH_RECORDS rows (200,000 by default) of NDJSON imported in the
 * background; the same file imported again as an upsert (every row unchanged) and once more with
 * every row changed; the CSV export of those records imported back by id (unedited: every row
 * unchanged); then the same rows sent through `POST /records/batch` in batches of 20 by 4
 * concurrent clients, in the same run. Prints a markdown table of the rates, the import file's
 * bytes in R2 and the bytes each way added to D1; asserts only that every row arrived once and
 * that each import did what it says.
 */
const ROWS = Number((env as unknown as { BENCH_RECORDS?: string }).BENCH_RECORDS || 200_000);
const CLIENTS = 4;
const BATCH = 20;

const row = (i: number, rank = i % 1000) => ({
  fieldValues: [
    { fieldName: 'first', value: `Ann${i % 97}` },
    { fieldName: 'last', value: `Smith ${i}` },
    { fieldName: 'rank', value: rank },
  ],
});

/** D1's size in bytes, as its own answer says it. */
async function databaseBytes(): Promise<number> {
  const result = await env.DB.prepare('SELECT 1').run();
  return (result.meta as { size_after?: number }).size_after ?? NaN;
}

async function count(objectId: number): Promise<number> {
  const row = await env.DB.prepare(
    'SELECT count(*) AS n, count(DISTINCT name) AS names FROM records WHERE object_id = ?',
  )
    .bind(objectId)
    .first<{ n: number; names: number }>();
  expect(row?.names).toBe(row?.n);
  return row?.n ?? 0;
}

/** Imports `file` and waits for it: its seconds. */
async function imported(key: string, path: string, file: string, type: string, rows: object): Promise<number> {
  const start = performance.now();
  const answer = await exports.default.fetch(`http://records.test${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': type },
    body: file,
  });
  expect(answer.status).toBe(202);
  const { id } = (await answer.json()) as { id: number };
  for (;;) {
    const state = (await call('GET', `/imports/${id}`, { key })).body;
    if (state.status !== 'queued' && state.status !== 'running') {
      expect(state).toMatchObject({ status: 'succeeded', rows: { ...rows, failed: 0 } });
      return (performance.now() - start) / 1000;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe(`import of ${ROWS} rows beside the batch API`, () => {
  it('rates and bytes of every way in', { timeout: 3_600_000 }, async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const fields = [
      { name: 'first', type: 'text', required: true },
      { name: 'last', type: 'text', unique: true },
      { name: 'rank', type: 'integer' },
    ];
    const definition = { name: 'Person', nameTemplate: '{first} {last}', fields };
    const target = (await admin('POST', '/admin/objects', { ...definition, workspaceIds: [workspaceId] })).body;
    const batched = (await admin('POST', '/admin/objects', { ...definition, workspaceIds: [workspaceId] })).body;
    const ndjson = 'application/x-ndjson';
    const importPath = (query = '') => `/workspaces/${workspaceId}/imports?objectId=${target.id}${query}`;

    const file = Array.from({ length: ROWS }, (_, i) => JSON.stringify(row(i))).join('\n');
    const fileBytes = new TextEncoder().encode(file).byteLength;
    const d1Before = await databaseBytes();
    const createSeconds = await imported(editor.key, importPath(), file, ndjson, { created: ROWS });
    const d1AfterImport = await databaseBytes();
    expect(await count(target.id)).toBe(ROWS);

    const upsert = importPath('&mode=upsert&matchOn=last');
    const unchangedSeconds = await imported(editor.key, upsert, file, ndjson, { unchanged: ROWS });
    const changed = Array.from({ length: ROWS }, (_, i) => JSON.stringify(row(i, 1000 + i))).join('\n');
    const changedSeconds = await imported(editor.key, upsert, changed, ndjson, { updated: ROWS });
    const exportStart = performance.now();
    const csv = await (
      await exports.default.fetch(
        `http://records.test/workspaces/${workspaceId}/records/export?objectId=${target.id}&format=csv`,
        { headers: { Authorization: `Bearer ${editor.key}` } },
      )
    ).text();
    const exportSeconds = (performance.now() - exportStart) / 1000;
    const updateSeconds = await imported(editor.key, importPath('&mode=update'), csv, 'text/csv', {
      unchanged: ROWS,
    });
    expect(await count(target.id)).toBe(ROWS);

    const d1BeforeBatches = await databaseBytes();
    const batchStart = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (;;) {
          const from = next;
          next += BATCH;
          if (from >= ROWS) return;
          const body = Array.from({ length: Math.min(BATCH, ROWS - from) }, (_, k) => ({
            objectId: batched.id,
            ...row(from + k),
          }));
          const sent = await call('POST', '/records/batch', { key: editor.key, body });
          if (sent.status !== 201) throw new Error(`batch answered ${sent.status}`);
        }
      }),
    );
    const batchSeconds = (performance.now() - batchStart) / 1000;
    const d1AfterBatches = await databaseBytes();
    expect(await count(batched.id)).toBe(ROWS);

    const rate = (seconds: number) => Math.round(ROWS / seconds);
    const line = (way: string, seconds: number, d1: string, r2: string) =>
      `| ${way} | ${seconds.toFixed(1)} | ${rate(seconds)} | ${(createSeconds / seconds).toFixed(2)} | ${d1} | ${r2} |`;
    console.log(
      [
        `| way in (${ROWS} rows) | seconds | rows/s | rate ÷ the create import's | D1 bytes added | R2 bytes |`,
        '|---|---:|---:|---:|---:|---:|',
        line(
          'import, create (NDJSON)',
          createSeconds,
          String(d1AfterImport - d1Before),
          `${fileBytes} (kept while applied)`,
        ),
        line('import, upsert by a unique field, every row unchanged', unchangedSeconds, '–', String(fileBytes)),
        line('import, upsert by a unique field, every row changed', changedSeconds, '–', '–'),
        line(
          `import, update by id of the CSV export (${exportSeconds.toFixed(1)} s to export)`,
          updateSeconds,
          '–',
          '–',
        ),
        line(
          `POST /records/batch, ${CLIENTS} clients × ${BATCH}`,
          batchSeconds,
          String(d1AfterBatches - d1BeforeBatches),
          '0',
        ),
      ].join('\n'),
    );
  });
});
