import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { recordKeys } from '../../../src/domain/record-keys.ts';
import { admin, call, newUser, newWorkspace, rowsRead, type Answer } from '../../integration/helpers.ts';

/**
 * `npm run bench:scale`: a workspace of BENCH_RECORDS records (1,000,000 by default) beside one of
 * 1,000, loaded into local D1 with the keys every write gives a record; then, per query shape, the
 * rows D1 read and the milliseconds of the first and the tenth page of 20, per aggregate shape the
 * rows read, milliseconds and whether it counted every record, and the rows written by each kind
 * of write. Prints markdown tables; asserts only what does not depend on the machine.
 */
const RECORDS = Number((env as unknown as { BENCH_RECORDS?: string }).BENCH_RECORDS || 1_000_000);
const SMALL = 1_000;
const CHUNK = 5_000;

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const LAST = ['Smithson', 'Jones', 'Brown', 'Ölund'];
/** Every Ann1 is a Smith (11 % are `Ann1 Smith`); record 7777 is `Quillon Zyxwvut`. */
const nameOf = (i: number): string =>
  i === 7777 ? 'Quillon Zyxwvut' : `Ann${i % 9} ${i % 9 === 1 ? 'Smith' : LAST[i % 4]}`;

/** Ranks 0–999, but four records spread through the ids rank past every other (a rare range). */
const rankOf = (i: number): number => (i % 50_000 === 7777 ? 100_000 + i : (i * 7919) % 1000);

/** Inserts records `from`..`to` of the object into the workspace, with their keys, in one batch. */
async function load(objectId: number, workspaceId: number, from: number, to: number, idBase: number): Promise<void> {
  const tuples = [];
  for (let i = from; i <= to; i++) {
    const name = nameOf(i);
    const values = [fv('rank', rankOf(i)), fv('code', `c${i % 50}`), fv('amount', (i % 1000) / 4)];
    const keys = recordKeys(name, values);
    tuples.push([idBase + i, name, JSON.stringify(values), keys.nameKey, keys.terms, keys.folds, i]);
  }
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO records (id, object_id, object_version, name, field_values, creation_type, version, deleted,
         owned_by, created_at, created_by, updated_at, updated_by, is_template, name_key, terms, folds)
       SELECT value ->> 0, ?1, 1, value ->> 1, value ->> 2, 'User', 1, 0, NULL, value ->> 6, 1, value ->> 6, 1, 0,
         value ->> 3, value ->> 4, value ->> 5
       FROM json_each(?2)`,
    ).bind(objectId, JSON.stringify(tuples)),
    env.DB.prepare(
      `INSERT INTO record_workspaces (record_id, workspace_id) SELECT value ->> 0, ?1 FROM json_each(?2)`,
    ).bind(workspaceId, JSON.stringify(tuples.map((t) => [t[0]]))),
  ]);
}

const written = (answer: Answer): number =>
  Number(/rows;desc="(\d+) written/.exec(answer.headers.get('Server-Timing') ?? '')?.[1] ?? NaN);

describe(`reads over ${RECORDS} records beside ${SMALL}`, () => {
  it('rows read and ms of pages 1 and 10 per query shape; rows written per write', { timeout: 3_600_000 }, async () => {
    const editor = await newUser('editor');
    const members = { [editor.id]: 'editor' } as const;
    const big = await newWorkspace(members);
    const small = await newWorkspace(members);
    const fields = [
      { name: 'rank', type: 'integer', indexed: true },
      { name: 'code', type: 'text', indexed: true },
      { name: 'note', type: 'text' },
      { name: 'amount', type: 'number', indexed: true },
    ];
    const definition = { name: 'Person', workspaceIds: [big, small], fields };
    const object = (await admin('POST', '/admin/objects', definition)).body as { id: number };
    const t0 = performance.now();
    for (let from = 1; from <= RECORDS; from += CHUNK)
      await load(object.id, big, from, Math.min(RECORDS, from + CHUNK - 1), 0);
    await load(object.id, small, 1, SMALL, RECORDS);
    const loadSeconds = (performance.now() - t0) / 1000;

    const shapes: [string, string, Record<string, unknown> | undefined][] = [
      ['list (GET, by id)', 'GET', undefined],
      ['sort updatedAt desc', 'POST', { sort: [{ field: 'updatedAt', direction: 'desc' }] }],
      ['sort createdAt desc', 'POST', { sort: [{ field: 'createdAt', direction: 'desc' }] }],
      ['sort name asc', 'POST', { sort: [{ field: 'name' }] }],
      ['sort rank (indexed) asc', 'POST', { sort: [{ field: 'rank' }] }],
      ['search rare ("zyxw")', 'POST', { search: 'zyxw' }],
      ['search common ("ann1 smith")', 'POST', { search: 'ann1 smith' }],
      ['search one letter ("a")', 'POST', { search: 'a' }],
      ['indexed filter (code eq)', 'POST', { filter: { field: 'code', op: 'eq', value: 'c7' } }],
      [
        'indexed filter sorted by it (code eq, sort code)',
        'POST',
        { filter: { field: 'code', op: 'eq', value: 'c7' }, sort: [{ field: 'code' }] },
      ],
      ['range rare (rank gte 100000), by id', 'POST', { filter: { field: 'rank', op: 'gte', value: 100_000 } }],
      [
        'range rare, sort rank desc',
        'POST',
        { filter: { field: 'rank', op: 'gte', value: 100_000 }, sort: [{ field: 'rank', direction: 'desc' }] },
      ],
      [
        'range of the sort (rank 100–199, sort rank)',
        'POST',
        {
          filter: {
            and: [
              { field: 'rank', op: 'gte', value: 100 },
              { field: 'rank', op: 'lt', value: 200 },
            ],
          },
          sort: [{ field: 'rank' }],
        },
      ],
      ['range wide (rank gte 100), by id', 'POST', { filter: { field: 'rank', op: 'gte', value: 100 } }],
      ['indexed filter with count', 'POST', { filter: { field: 'code', op: 'eq', value: 'c7' }, count: true }],
      [
        "the console's grid (one object, sort name, count)",
        'POST',
        {
          filter: { and: [{ field: 'objectId', op: 'eq', value: object.id }] },
          sort: [{ field: 'name' }],
          count: true,
        },
      ],
    ];
    const lines: string[] = [];
    for (const [label, method, body] of shapes) {
      for (const [name, workspaceId] of [
        ['big', big],
        ['small', small],
      ] as const) {
        const figures: string[] = [];
        let cursor: string | null = null;
        for (let page = 1; page <= 10; page++) {
          const started = performance.now();
          const answer: Answer =
            method === 'GET'
              ? await call(
                  'GET',
                  `/workspaces/${workspaceId}/records?limit=20${cursor === null ? '' : `&cursor=${cursor}`}`,
                  { key: editor.key },
                )
              : await call('POST', `/workspaces/${workspaceId}/records/query`, {
                  key: editor.key,
                  body: { ...body, limit: 20, ...(cursor === null ? {} : { cursor }) },
                });
          const ms = performance.now() - started;
          expect(answer.status).toBe(200);
          // Every record is of the one object: its count is the kept total, exact.
          if (page === 1 && label.startsWith("the console's grid"))
            expect(answer.body.count).toEqual({ value: name === 'big' ? RECORDS : SMALL, exact: true });
          const items = method === 'GET' ? answer.body.items : answer.body.items;
          if (page === 1 || page === 10) figures.push(`${rowsRead(answer)} / ${ms.toFixed(1)} (${items.length})`);
          cursor = answer.body.nextCursor;
          if (cursor === null) {
            if (page < 10) figures.push(`– (ended on page ${page})`);
            break;
          }
        }
        lines.push(`| ${label} | ${name} | ${figures.join(' | ')} |`);
      }
    }

    // Aggregates: by an indexed field from the totals kept per group (exact at any size), the rest by
    // reading at most 20,000 records (never more than 100,000 rows).
    const count = { op: 'count' };
    const aggregates: [string, boolean, Record<string, unknown>][] = [
      ['count, sum amount (kept)', true, { measures: [count, { op: 'sum', field: 'amount' }] }],
      [
        'count, sum rank, avg amount by code (kept)',
        true,
        {
          groupBy: [{ field: 'code' }],
          measures: [count, { op: 'sum', field: 'rank' }, { op: 'avg', field: 'amount' }],
        },
      ],
      ['count by note (unindexed: read)', false, { groupBy: [{ field: 'note' }], measures: [count] }],
      [
        'count by code, filtered (read)',
        false,
        { filter: { field: 'rank', op: 'lt', value: 100 }, groupBy: [{ field: 'code' }], measures: [count] },
      ],
      ['max amount (read)', false, { measures: [{ op: 'max', field: 'amount' }] }],
    ];
    const aggregateLines: string[] = [];
    for (const [label, kept, body] of aggregates)
      for (const [name, workspaceId] of [
        ['big', big],
        ['small', small],
      ] as const) {
        const started = performance.now();
        const answer = await call('POST', `/workspaces/${workspaceId}/records/aggregate`, {
          key: editor.key,
          body: { objectId: object.id, limit: 100, ...body },
        });
        const ms = performance.now() - started;
        expect(answer.status).toBe(200);
        if (kept) expect([answer.body.exact, rowsRead(answer) <= 5000]).toEqual([true, true]);
        else expect(rowsRead(answer)).toBeLessThanOrEqual(100_000);
        aggregateLines.push(
          `| ${label} | ${name} | ${rowsRead(answer)} | ${ms.toFixed(1)} | ${answer.body.exact} | ` +
            `${answer.body.groups.length} |`,
        );
      }

    // Rows written per write, in the big workspace.
    const created = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('rank', 1), fv('code', 'new'), fv('note', 'Ann Smith')] }],
    });
    const id = created.body[0].record.id as number;
    const path = `/workspaces/${big}/records/${id}`;
    await call('GET', path, { key: editor.key });
    const patch = (fieldValues: unknown[]) => call('PATCH', path, { key: editor.key, body: { fieldValues } });
    const writes: [string, Answer][] = [
      ['create (one record)', created],
      [
        'create 20 (one batch)',
        await call('POST', '/records/batch', {
          key: editor.key,
          body: Array.from({ length: 20 }, (_, i) => ({ objectId: object.id, fieldValues: [fv('rank', i)] })),
        }),
      ],
      ['patch one unindexed field', await patch([fv('note', 'x')])],
      ['patch one indexed field', await patch([fv('rank', 2)])],
      ['patch an indexed number (kept in 2 groups)', await patch([fv('amount', 2.5)])],
      [
        'patch with an Idempotency-Key',
        await call('PATCH', path, {
          key: editor.key,
          body: { fieldValues: [fv('note', 'y')] },
          headers: { 'Idempotency-Key': 'bench-scale' },
        }),
      ],
      ['delete', await call('DELETE', path, { key: editor.key })],
    ];
    const writeLines = writes.map(([label, answer]) => `| ${label} | ${answer.status} | ${written(answer)} |`);
    const date = new Date().toISOString().slice(0, 10);
    console.log(
      [
        `${date}: ${RECORDS} records in one workspace, ${SMALL} in another (loaded in ${loadSeconds.toFixed(0)} s); ` +
          'pages of 20; D1 rows read / ms (items)',
        '| query | workspace | page 1 | page 10 |',
        '|---|---|---:|---:|',
        ...lines,
        '',
        '| aggregate | workspace | rows read | ms | exact | groups |',
        '|---|---|---:|---:|---|---:|',
        ...aggregateLines,
        '',
        '| write | status | rows written |',
        '|---|---:|---:|',
        ...writeLines,
      ].join('\n'),
    );
  });
});
