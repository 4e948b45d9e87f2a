import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call, fillKeys, newUser, newWorkspace, type Answer } from '../../integration/helpers.ts';

/**
 * `npm run bench:query`: query latency and D1 rows read for a filter on an indexed field, the
 * same filter on an unindexed one and a name search, over RECORDS records in one workspace,
 * inside the Workers runtime against local D1. Prints a table; asserts only what does not depend
 * on the machine (the indexed page reads rows by the page, the unindexed walk ends).
 */
const RECORDS = Number((env as unknown as { BENCH_RECORDS?: string }).BENCH_RECORDS || 100_000);
const RUNS = 20;

const rowsRead = (answer: Answer): number =>
  Number(/rows;desc="\d+ written, (\d+) read"/.exec(answer.headers.get('Server-Timing') ?? '')?.[1] ?? NaN);

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

describe(`queries over ${RECORDS} records`, () => {
  it('indexed vs unindexed filters: latency and rows read', { timeout: 900_000 }, async () => {
    const viewer = await newUser('viewer');
    const workspaceId = await newWorkspace({ [viewer.id]: 'viewer' });
    const fields = [
      { name: 'code', type: 'text', indexed: true },
      { name: 'plain', type: 'text' },
    ];
    const object = (await admin('POST', '/admin/objects', { name: 'Bench', workspaceIds: [workspaceId], fields })).body;
    for (let start = 0; start < RECORDS; start += 10_000) {
      await env.DB.batch([
        env.DB.prepare(
          `INSERT INTO records (id, object_id, object_version, name, field_values, creation_type, version, deleted,
             owned_by, created_at, created_by, updated_at, updated_by, is_template, name_key)
           WITH RECURSIVE s(i) AS (SELECT ?3 UNION ALL SELECT i + 1 FROM s WHERE i < ?4)
           SELECT i, ?1, 1, 'Bench ' || i, json_array(
               json_object('fieldName', 'code', 'value', iif(i % 1000 = 0, 'rare', 'c' || i)),
               json_object('fieldName', 'plain', 'value', iif(i % 1000 = 0, 'rare', 'p' || i))),
             'User', 1, 0, NULL, i, 1, i, 1, 0, 'bench ' || i FROM s`,
        ).bind(object.id, workspaceId, start + 1, Math.min(RECORDS, start + 10_000)),
        env.DB.prepare(
          'INSERT INTO record_workspaces (record_id, workspace_id) SELECT id, ?2 FROM records WHERE id BETWEEN ?3' +
            ' AND ?4',
        ).bind(object.id, workspaceId, start + 1, Math.min(RECORDS, start + 10_000)),
      ]);
    }
    // Their keys, as the scheduled run computes them for records written before keys were kept.
    await fillKeys();
    const lines: string[] = [];
    // Filters on each field, then a name search (`bench 7777` and its ten longer prefixes' matches) by
    // relevance and by id: read from the workspace's name terms.
    const cases: [string, Record<string, unknown>, number][] = [
      ['indexed', { filter: { field: 'code', op: 'eq', value: 'rare' } }, Math.floor(RECORDS / 1000)],
      ['unindexed', { filter: { field: 'plain', op: 'eq', value: 'rare' } }, Math.floor(RECORDS / 1000)],
      ['search, by relevance', { search: 'bench 7777' }, RECORDS >= 77_779 ? 11 : 1],
      ['search, by id', { search: 'bench 7777', sort: [{ field: 'id' }] }, RECORDS >= 77_779 ? 11 : 1],
    ];
    for (const [label, query, matches] of cases) {
      const body = { ...query, limit: 50 };
      const times: number[] = [];
      const reads: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        const t0 = performance.now();
        const answer = await call('POST', `/workspaces/${workspaceId}/records/query`, { key: viewer.key, body });
        times.push(performance.now() - t0);
        reads.push(rowsRead(answer));
        expect(answer.status).toBe(200);
      }
      // The whole walk: every page until nextCursor is null.
      let cursor: string | null = null;
      let pages = 0;
      let found = 0;
      let walkRows = 0;
      const t0 = performance.now();
      do {
        const answer: Answer = await call('POST', `/workspaces/${workspaceId}/records/query`, {
          key: viewer.key,
          body: { ...body, ...(cursor === null ? {} : { cursor }) },
        });
        expect(answer.status).toBe(200);
        found += answer.body.items.length;
        walkRows += rowsRead(answer);
        pages += 1;
        cursor = answer.body.nextCursor;
      } while (cursor !== null);
      const walkMs = performance.now() - t0;
      expect(found).toBe(matches);
      lines.push(
        `| ${label} | ${median(times).toFixed(1)} | ${median(reads)} | ` +
          `${pages} | ${walkMs.toFixed(0)} | ${walkRows} |`,
      );
    }
    // A sort by the indexed field, no filter: the first page only (a walk is 2,000 pages).
    const sortTimes: number[] = [];
    const sortReads: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const t0 = performance.now();
      const answer = await call('POST', `/workspaces/${workspaceId}/records/query`, {
        key: viewer.key,
        body: { sort: [{ field: 'code', direction: 'desc' }], limit: 50 },
      });
      sortTimes.push(performance.now() - t0);
      sortReads.push(rowsRead(answer));
      expect(answer.body.items).toHaveLength(50);
    }
    lines.push(`| sort by indexed, no filter | ${median(sortTimes).toFixed(1)} | ${median(sortReads)} | – | – | – |`);
    console.log(
      [
        `${RECORDS} records, 1 in 1,000 matching a filter; first page of 50: median of ${RUNS}`,
        '| filter | first page ms | first page rows read | pages to walk all | walk ms | walk rows read |',
        '|---|---:|---:|---:|---:|---:|',
        ...lines,
      ].join('\n'),
    );
  });
});
