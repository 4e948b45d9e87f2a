import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call, newUser, newWorkspace } from '../../integration/helpers.ts';

/**
 * `npm run bench:import`: BENCH_RECORDS rows (200,000 by default) of NDJSON imported in the
 * background, then the same rows sent through `POST /records/batch` in batches of 20 by 4
 * concurrent clients, in the same run: both rates, the import file's bytes in R2 and the bytes
 * each way added to D1. Prints a markdown table; asserts only that every row arrived once.
 */
const ROWS = Number((env as unknown as { BENCH_RECORDS?: string }).BENCH_RECORDS || 200_000);
const CLIENTS = 4;
const BATCH = 20;

const row = (i: number) => ({
  fieldValues: [
    { fieldName: 'first', value: `Ann${i % 97}` },
    { fieldName: 'last', value: `Smith ${i}` },
    { fieldName: 'rank', value: i % 1000 },
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

describe(`import of ${ROWS} rows beside the batch API`, () => {
  it('rates and bytes of both ways in', { timeout: 3_600_000 }, async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const fields = [
      { name: 'first', type: 'text', required: true },
      { name: 'last', type: 'text', unique: true },
      { name: 'rank', type: 'integer' },
    ];
    const definition = { name: 'Person', nameTemplate: '{first} {last}', fields };
    const imported = (await admin('POST', '/admin/objects', { ...definition, workspaceIds: [workspaceId] })).body;
    const batched = (await admin('POST', '/admin/objects', { ...definition, workspaceIds: [workspaceId] })).body;

    const file = Array.from({ length: ROWS }, (_, i) => JSON.stringify(row(i))).join('\n');
    const fileBytes = new TextEncoder().encode(file).byteLength;
    const d1Before = await databaseBytes();
    const importStart = performance.now();
    const answer = await exports.default.fetch(
      `http://records.test/workspaces/${workspaceId}/imports?objectId=${imported.id}`,
      {
        method: 'POST',
        headers: { Authorization: `Bearer ${editor.key}`, 'Content-Type': 'application/x-ndjson' },
        body: file,
      },
    );
    expect(answer.status).toBe(202);
    const { id } = (await answer.json()) as { id: number };
    const r2Bytes = (await env.IMPORT_FILES.list()).objects.reduce((n, o) => n + o.size, 0);
    for (;;) {
      const state = (await call('GET', `/imports/${id}`, { key: editor.key })).body;
      if (state.status !== 'queued' && state.status !== 'running') {
        expect(state).toMatchObject({ status: 'succeeded', rows: { created: ROWS, failed: 0 } });
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const importSeconds = (performance.now() - importStart) / 1000;
    const upsertStart = performance.now();
    const upserted = await exports.default.fetch(
      `http://records.test/workspaces/${workspaceId}/imports?objectId=${imported.id}&mode=upsert&matchOn=last`,
      {
        method: 'POST',
        headers: { Authorization: `Bearer ${editor.key}`, 'Content-Type': 'application/x-ndjson' },
        body: file,
      },
    );
    expect(upserted.status).toBe(202);
    const upsertId = ((await upserted.json()) as { id: number }).id;
    for (;;) {
      const state = (await call('GET', `/imports/${upsertId}`, { key: editor.key })).body;
      if (state.status !== 'queued' && state.status !== 'running') {
        expect(state).toMatchObject({ status: 'succeeded', rows: { unchanged: ROWS, failed: 0 } });
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const upsertSeconds = (performance.now() - upsertStart) / 1000;
    console.log(`upsert ${upsertSeconds.toFixed(1)} s, ${Math.round(ROWS / upsertSeconds)} rows/s`);
    const d1AfterImport = await databaseBytes();
    expect(await count(imported.id)).toBe(ROWS);

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
    console.log(
      [
        `| way in (${ROWS} rows) | seconds | rows/s | D1 bytes added | R2 bytes |`,
        '|---|---:|---:|---:|---:|',
        `| import (NDJSON, one file) | ${importSeconds.toFixed(1)} | ${rate(importSeconds)} | ` +
          `${d1AfterImport - d1Before} | ${r2Bytes} (file: ${fileBytes}; deleted once applied) |`,
        `| POST /records/batch, ${CLIENTS} clients × ${BATCH} | ${batchSeconds.toFixed(1)} | ${rate(batchSeconds)} | ` +
          `${d1AfterBatches - d1AfterImport} | 0 |`,
      ].join('\n'),
    );
  });
});
