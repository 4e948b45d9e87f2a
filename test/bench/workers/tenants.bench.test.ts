import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call } from '../../integration/helpers.ts';

/**
 * `npm run bench:tenants`: what one tenant's work costs another. Tenant B patches one record at a
 * time, alone; then while tenant A imports BENCH_RECORDS rows (100,000 by default) on B's database;
 * then while A imports them on another database. Then the import rate of 1, 2 and 3 tenants
 * importing BENCH_RATE_RECORDS rows each (30,000 by default) at once on one database, against 3
 * tenants importing at once, each on a database of its own. Prints a markdown table; asserts only
 * that every import and patch did what it says.
 */
const ROWS = Number((env as unknown as { BENCH_RECORDS?: string }).BENCH_RECORDS || 100_000);
const RATE_ROWS = Number((env as unknown as { BENCH_RATE_RECORDS?: string }).BENCH_RATE_RECORDS || 30_000);
/** B's patches alone: enough for a p99. */
const ALONE_PATCHES = 500;

type Tenant = { id: number; database: string; key: string; workspaceId: number; objectId: number };

const row = (i: number) =>
  JSON.stringify({
    fieldValues: [
      { fieldName: 'first', value: `Ann${i % 97}` },
      { fieldName: 'last', value: `Smith ${i}` },
      { fieldName: 'rank', value: i % 1000 },
    ],
  });

/** A tenant on `database`, built by its own administrator: an editor of a workspace with a Person object. */
async function newTenant(name: string, database: string): Promise<Tenant> {
  const tenant = await admin('POST', '/tenants', { name, database });
  expect(tenant.status).toBe(201);
  const as = (method: string, path: string, body?: unknown) =>
    call(method, path, { key: tenant.body.adminKey, ...(body === undefined ? {} : { body }) });
  const user = await as('POST', '/admin/users', { name: 'editor' });
  const key = await as('POST', `/admin/users/${user.body.id}/keys`);
  const workspace = await as('POST', '/admin/workspaces', { name: 'ws' });
  await as('PUT', `/admin/workspaces/${workspace.body.id}/members/${user.body.id}`, { role: 'editor' });
  const object = await as('POST', '/admin/objects', {
    name: 'Person',
    workspaceIds: [workspace.body.id],
    nameTemplate: '{first} {last}',
    fields: [
      { name: 'first', type: 'text', required: true },
      { name: 'last', type: 'text' },
      { name: 'rank', type: 'integer' },
    ],
  });
  expect(object.status).toBe(201);
  return { id: tenant.body.id, database, key: key.body.key, workspaceId: workspace.body.id, objectId: object.body.id };
}

/** Starts an import of `rows` rows for `tenant`; resolves with its seconds once it succeeded. */
async function imported(tenant: Tenant, rows: number): Promise<number> {
  const file = Array.from({ length: rows }, (_, i) => row(i)).join('\n');
  const start = performance.now();
  const answer = await exports.default.fetch(
    `http://records.test/workspaces/${tenant.workspaceId}/imports?objectId=${tenant.objectId}`,
    {
      method: 'POST',
      headers: { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/x-ndjson' },
      body: file,
    },
  );
  expect(answer.status).toBe(202);
  const { id } = (await answer.json()) as { id: number };
  for (;;) {
    const state = (await call('GET', `/imports/${id}`, { key: tenant.key })).body;
    if (state.status !== 'queued' && state.status !== 'running') {
      expect(state).toMatchObject({ status: 'succeeded', rows: { created: rows, failed: 0 } });
      return (performance.now() - start) / 1000;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** B's record, patched one request at a time until `until` settles (or `count` patches): each one's ms. */
async function patchTimes(b: Tenant, recordId: number, until: Promise<unknown> | number): Promise<number[]> {
  const times: number[] = [];
  let done = false;
  if (typeof until !== 'number') void until.finally(() => (done = true));
  const limit = typeof until === 'number' ? until : Infinity;
  while (!done && times.length < limit) {
    const start = performance.now();
    const answer = await call('PATCH', `/workspaces/${b.workspaceId}/records/${recordId}`, {
      key: b.key,
      body: { fieldValues: [{ fieldName: 'rank', value: times.length }] },
    });
    times.push(performance.now() - start);
    if (answer.status !== 200) throw new Error(`patch answered ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  return times;
}

const percentile = (times: number[], p: number) => {
  const sorted = [...times].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
};
const latency = (times: number[]) =>
  `${percentile(times, 50).toFixed(1)} / ${percentile(times, 99).toFixed(1)} (${times.length} patches)`;

describe('tenants beside each other', () => {
  it(
    'patch latency beside an import, and import rates on shared and separate databases',
    { timeout: 7_200_000 },
    async () => {
      const b = await newTenant('B', 'DB_2');
      const created = await call('POST', '/records/batch', {
        key: b.key,
        body: [{ objectId: b.objectId, fieldValues: [{ fieldName: 'first', value: 'Bo' }] }],
      });
      expect(created.status).toBe(201);
      const recordId = created.body[0].record.id as number;
      await patchTimes(b, recordId, 20); // B's record object and the isolate's caches warm

      const alone = await patchTimes(b, recordId, ALONE_PATCHES);
      const aSame = await newTenant('A, same database', 'DB_2');
      const sameImport = imported(aSame, ROWS);
      const besideSame = await patchTimes(b, recordId, sameImport);
      const sameSeconds = await sameImport;
      const aOther = await newTenant('A, other database', 'DB_3');
      const otherImport = imported(aOther, ROWS);
      const besideOther = await patchTimes(b, recordId, otherImport);
      const otherSeconds = await otherImport;

      /** `count` tenants on `databases` (one each, round) import RATE_ROWS rows each at once: rows a second. */
      const rate = async (label: string, databases: string[]) => {
        const tenants = await Promise.all(databases.map((database, i) => newTenant(`${label} ${i}`, database)));
        const start = performance.now();
        const each = await Promise.all(tenants.map((tenant) => imported(tenant, RATE_ROWS)));
        const seconds = (performance.now() - start) / 1000;
        return { seconds, total: Math.round((RATE_ROWS * tenants.length) / seconds), each };
      };
      const one = await rate('one', ['DB_2']);
      const two = await rate('two', ['DB_2', 'DB_2']);
      const three = await rate('three', ['DB_2', 'DB_2', 'DB_2']);
      const apart = await rate('apart', ['DB', 'DB_2', 'DB_3']);

      const rateLine = (what: string, r: { seconds: number; total: number; each: number[] }) =>
        `| ${what} | ${r.seconds.toFixed(1)} | ${r.total} | ` +
        `${r.each.map((s) => Math.round(RATE_ROWS / s)).join(', ')} | ${(r.total / one.total).toFixed(2)} |`;
      console.log(
        [
          `| tenant B's one-record patches | p50 / p99 ms |`,
          '|---|---:|',
          `| alone | ${latency(alone)} |`,
          `| while A imports ${ROWS} rows on B's database (${sameSeconds.toFixed(1)} s) | ${latency(besideSame)} |`,
          `| while A imports ${ROWS} rows on another database (${otherSeconds.toFixed(1)} s) | ` +
            `${latency(besideOther)} |`,
          '',
          `| tenants importing ${RATE_ROWS} rows each, at once | seconds | rows/s, all | rows/s, each | ÷ one alone |`,
          '|---|---:|---:|---:|---:|',
          rateLine('1, on one database', one),
          rateLine('2, on one database', two),
          rateLine('3, on one database', three),
          rateLine('3, each on its own database', apart),
        ].join('\n'),
      );
    },
  );
});
