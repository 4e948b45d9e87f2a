import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  admin,
  bulkRecords,
  newUser,
  newWorkspace,
  queryRecords,
  rowsRead,
  walkQuery,
  type Answer,
} from './helpers.ts';

/**
 * Ranges and conditions over 30,000 records of one workspace: a range on an indexed field walks
 * the field's index whether or not the page is sorted by it, a condition reads a record's values
 * once, as one row, and a count is never below the page it comes with.
 */

const N = 30_000;
/** Rows a page of 20 may read: a sort, a rare range. */
const PAGE_ROWS = 400;

// `delay`: i % 900, but four records spread through the ids have delays of 1000 and more.
const LATE_FLIGHTS = [3001, 11002, 19003, 27004];
// `code`: c0 … c49, but two records hold codes past every other ("zulu-…").
const ZULU = [5005, 25025];
// `late`: 1 only for the last 5,000 records (past the first 20,000 that a count reads).
const VALUES = `json_array(
  json_object('fieldName', 'delay', 'value',
    CASE WHEN i IN (${LATE_FLIGHTS.join(', ')}) THEN 1000 + i ELSE i % 900 END),
  json_object('fieldName', 'code', 'value',
    CASE WHEN i IN (${ZULU.join(', ')}) THEN 'zulu-' || i ELSE 'c' || (i % 50) END),
  json_object('fieldName', 'note', 'value', 'Note ' || (i % 97)),
  json_object('fieldName', 'late', 'value', iif(i > 25000, 1, 0)))`;

let viewer: { id: number; key: string };
let workspaceId: number;

beforeAll(async () => {
  const editor = await newUser('editor');
  viewer = await newUser('viewer');
  workspaceId = await newWorkspace({ [editor.id]: 'editor', [viewer.id]: 'viewer' });
  const fields = [
    { name: 'delay', type: 'integer', indexed: true },
    { name: 'code', type: 'text', indexed: true },
    { name: 'note', type: 'text' },
    { name: 'late', type: 'integer' },
  ];
  const object = await admin('POST', '/admin/objects', { name: 'Flight', workspaceIds: [workspaceId], fields });
  await bulkRecords(object.body.id, workspaceId, N, VALUES);
}, 300_000);

const query = (body: Record<string, unknown>): Promise<Answer> => queryRecords(viewer.key, workspaceId, body);
const ids = (answer: Answer): number[] => answer.body.items.map((r: { id: number }) => r.id);

/** The ids of the workspace's records whose `where` (SQL on `r`) holds, in `order`. */
async function truth(where: string, order = 'r.id'): Promise<number[]> {
  const rows = await env.DB.prepare(
    `SELECT r.id FROM records r JOIN record_workspaces w ON w.record_id = r.id AND w.workspace_id = ?
     WHERE ${where} ORDER BY ${order}`,
  )
    .bind(workspaceId)
    .all<{ id: number }>();
  return rows.results.map((row) => row.id);
}
const DELAY = `(r.field_values ->> '$[0].value')`;

describe(`a range on an indexed field among ${N} records walks the field's index`, () => {
  const rare: [string, Record<string, unknown>, number[]][] = [
    ['delay gte 1000', { field: 'delay', op: 'gte', value: 1000 }, LATE_FLIGHTS],
    [
      'delay gt 4001 and lte 28004',
      {
        and: [
          { field: 'delay', op: 'gt', value: 4001 },
          { field: 'delay', op: 'lte', value: 28_004 },
        ],
      },
      LATE_FLIGHTS.slice(1),
    ],
    ['code gt "z"', { field: 'code', op: 'gt', value: 'z' }, ZULU],
    ['code startsWith "zulu-"', { field: 'code', op: 'startsWith', value: 'zulu-' }, ZULU],
    ['code startsWith "zulu-25"', { field: 'code', op: 'startsWith', value: 'zulu-25' }, ZULU.slice(1)],
    ['delay lt 0', { field: 'delay', op: 'lt', value: 0 }, []],
  ];
  const sorts: [string, unknown[] | undefined, (matches: number[]) => number[]][] = [
    ['no sort', undefined, (m) => m],
    ['by id desc', [{ field: 'id', direction: 'desc' }], (m) => [...m].reverse()],
    ['by delay', [{ field: 'delay' }], (m) => m],
    ['by delay desc', [{ field: 'delay', direction: 'desc' }], (m) => [...m].reverse()],
    ['by updatedAt desc', [{ field: 'updatedAt', direction: 'desc' }], (m) => [...m].reverse()],
  ];
  for (const [label, filter, matches] of rare)
    for (const [how, sort, order] of sorts)
      it(`${label}, ${how}: every match on page 1 within ${PAGE_ROWS} rows read`, async () => {
        const answer = await query({ filter, ...(sort === undefined ? {} : { sort }), limit: 20 });
        expect(answer.status).toBe(200);
        // Each record's delay (and updatedAt) rises with its id, so every order here is the ids' order.
        expect(ids(answer)).toEqual(order(matches));
        expect(answer.body.nextCursor).toBeNull();
        expect(rowsRead(answer)).toBeLessThanOrEqual(PAGE_ROWS);
      });

  it('a sort by an indexed field filtered by a range of it: full pages in order, each within 400 rows', async () => {
    const filter = {
      and: [
        { field: 'delay', op: 'gte', value: 100 },
        { field: 'delay', op: 'lt', value: 200 },
      ],
    };
    for (const direction of ['asc', 'desc'] as const) {
      const body = { filter, sort: [{ field: 'delay', direction }], limit: 20 };
      let answer = await query(body);
      const first = rowsRead(answer);
      expect(first).toBeLessThanOrEqual(PAGE_ROWS);
      for (let page = 1; page <= 10; page++) {
        expect([direction, page, answer.body.items.length]).toEqual([direction, page, 20]);
        // Later pages read what the first did: the walk starts at the cursor, not at the range's start.
        expect([direction, page, rowsRead(answer) <= first + 5]).toEqual([direction, page, true]);
        answer = await query({ ...body, cursor: answer.body.nextCursor });
      }
      const dir = direction === 'asc' ? '' : 'DESC';
      const expected = await truth(`${DELAY} >= 100 AND ${DELAY} < 200`, `${DELAY} ${dir}, r.id ${dir}`);
      expect(expected.length).toBeGreaterThan(3_000);
      const walked = await walkQuery(viewer.key, workspaceId, { ...body, limit: 100 });
      expect(walked.ids).toEqual(expected);
      expect(walked.pages).toBe(Math.ceil(expected.length / 100));
    }
  });

  it('a range without a sort by its field: full pages in id order, whether few or most records meet it', async () => {
    // About 200 records: their index entries are read and ordered by id, each page within 1,000 rows.
    const narrow = {
      and: [
        { field: 'delay', op: 'gte', value: 100 },
        { field: 'delay', op: 'lte', value: 105 },
      ],
    };
    const walked = await walkQuery(viewer.key, workspaceId, { filter: narrow, limit: 20 });
    const expected = await truth(`${DELAY} BETWEEN 100 AND 105`);
    expect(walked.ids).toEqual(expected);
    expect(walked.pages).toBe(Math.ceil(expected.length / 20));
    expect(walked.rowsRead.filter((n) => n > 1_000)).toEqual([]);
    // Most records: a short walk of the workspace in id order fills the page.
    const wide = { filter: { field: 'code', op: 'gte', value: 'c1' }, limit: 20 };
    const first = await query(wide);
    expect(ids(first)).toEqual((await truth(`r.field_values ->> '$[1].value' >= 'c1'`)).slice(0, 20));
    expect(rowsRead(first)).toBeLessThanOrEqual(PAGE_ROWS);
    // Most records, but not the first ones (every delay below 100 comes first): the short walk, the
    // range's entries counted up to 1,000, then the walk of the workspace.
    const late = await query({ filter: { field: 'delay', op: 'gte', value: 100 }, limit: 20 });
    expect(ids(late)).toEqual((await truth(`${DELAY} >= 100`)).slice(0, 20));
    expect(rowsRead(late)).toBeLessThanOrEqual(2_000);
  });

  it('a startsWith on an indexed text walks the prefix as a range: full pages, sorted by it or by id', async () => {
    // c1 and c10 to c19: 11 codes of 50, about 6,600 records.
    const filter = { field: 'code', op: 'startsWith', value: 'c1' };
    const code = `r.field_values ->> '$[1].value'`;
    // By id, as a range of most records above: the short walk, the range's entries counted, then the workspace's.
    for (const [sort, order, rows] of [
      [undefined, 'r.id', 2_000],
      [[{ field: 'code' }], `${code}, r.id`, PAGE_ROWS],
      [[{ field: 'code', direction: 'desc' }], `${code} DESC, r.id DESC`, PAGE_ROWS],
    ] as const) {
      const body = { filter, limit: 20, ...(sort === undefined ? {} : { sort }) };
      const expected = await truth(`substr(${code}, 1, 2) = 'c1'`, order);
      expect(expected.length).toBeGreaterThan(6_000);
      let answer = await query(body);
      for (let page = 1; page <= 5; page++) {
        expect(ids(answer)).toEqual(expected.slice((page - 1) * 20, page * 20));
        expect(rowsRead(answer)).toBeLessThanOrEqual(rows);
        answer = await query({ ...body, cursor: answer.body.nextCursor });
      }
    }
  });
});

describe('a condition reads each record it considers once, as one row', () => {
  /** The position, in the workspace's id order, of the k-th record whose `where` holds. */
  async function considered(where: string, k: number): Promise<number> {
    const all = await truth('1');
    const matches = await truth(where);
    return all.indexOf(matches[k - 1] ?? -1) + 1;
  }

  it('a contains, and an or of 50 conditions, with a count: at most 2 rows a record considered', async () => {
    const plain = rowsRead(await query({ limit: 20 }));
    const or = Array.from({ length: 50 }, (_, k) => ({ field: 'note', op: 'eq', value: `Note ${k * 2 + 1}` }));
    const cases: [Record<string, unknown>, string][] = [
      [{ field: 'note', op: 'contains', value: 'TE 1' }, `r.field_values ->> '$[2].value' LIKE 'Note 1%'`],
      [{ or }, `(r.field_values ->> '$[2].value') IN (${or.map((c) => `'${c.value}'`).join(', ')})`],
    ];
    for (const [filter, where] of cases) {
      const answer = await query({ filter, count: true, limit: 20 });
      expect(ids(answer)).toEqual((await truth(where)).slice(0, 20));
      // The count reads the first 20,000 candidates and one more; the page, up to its 21st match.
      expect(answer.body.count).toEqual({ value: expect.any(Number), exact: false });
      const records = 20_001 + (await considered(where, 21));
      expect([filter, rowsRead(answer) - plain]).toEqual([filter, expect.any(Number)]);
      expect(rowsRead(answer) - plain).toBeLessThanOrEqual(2 * records);
      // Without the count, the page alone.
      const page = await query({ filter, limit: 20 });
      expect(rowsRead(page) - plain).toBeLessThanOrEqual(2 * (await considered(where, 21)));
    }
  });

  it('a count that stops being exact is never below the items its page shows', async () => {
    // The matches are the last 5,000 records: the count's first 20,001 candidates hold none.
    const answer = await query({
      filter: { field: 'late', op: 'eq', value: 1 },
      sort: [{ field: 'id', direction: 'desc' }],
      count: true,
      limit: 100,
    });
    expect(ids(answer)).toEqual((await truth(`r.field_values ->> '$[3].value' = 1`)).reverse().slice(0, 100));
    expect(answer.body.count).toEqual({ value: 100, exact: false });
    // Where it is exact, it is the number of matches.
    const exact = await query({ filter: { field: 'delay', op: 'gte', value: 1000 }, count: true });
    expect(exact.body.count).toEqual({ value: LATE_FLIGHTS.length, exact: true });
  });
});
