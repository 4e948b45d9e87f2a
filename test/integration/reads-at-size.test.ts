import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  admin,
  bulkRecords,
  call,
  newUser,
  newWorkspace,
  queryRecords,
  rowsRead,
  walkQuery,
  type Answer,
} from './helpers.ts';

/**
 * Reads at real size: a workspace of 20,000 records beside one of 1,000 (half of whose records
 * are shared with the big one too). Every page of a search, a sort by a kept key or an `eq` on an
 * indexed field is full, and its D1 rows read grow with the page, not with the workspace.
 */

const BIG = 20_000;
const SMALL = 1_000;
/** Rows a first or later page of 20 may read: a sort, a search. */
const SORT_ROWS = 400;
const SEARCH_ROWS = 1_500;

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

// Names: `Ann<i % 9>` and a last name; every Ann1 is a Smith (11 % of the records are `Ann1 Smith`);
// one record is `Quillon Zyxwvut`.
const FIRST = `'Ann' || (i % 9)`;
const LAST = `CASE WHEN i % 9 = 1 THEN 'Smith' WHEN i % 4 = 0 THEN 'Smithson' WHEN i % 4 = 1 THEN 'Jones'
  WHEN i % 4 = 2 THEN 'Brown' ELSE 'Ölund' END`;
const NAME = `CASE WHEN i = 7777 THEN 'Quillon Zyxwvut' ELSE ${FIRST} || ' ' || ${LAST} END`;
const VALUES = `json_array(json_object('fieldName', 'rank', 'value', (i * 7919) % 1000),
  json_object('fieldName', 'code', 'value', 'c' || (i % 50)))`;

let viewer: { id: number; key: string };
let editor: { id: number; key: string };
let big: number;
let small: number;
let objectId: number;

beforeAll(async () => {
  editor = await newUser('editor');
  viewer = await newUser('viewer');
  const members = { [editor.id]: 'editor', [viewer.id]: 'viewer' } as const;
  big = await newWorkspace(members);
  small = await newWorkspace(members);
  const fields = [
    { name: 'rank', type: 'integer', indexed: true },
    { name: 'code', type: 'text', indexed: true },
  ];
  const definition = { name: 'Person', nameTemplate: '{rank}', workspaceIds: [big, small], fields };
  objectId = (await admin('POST', '/admin/objects', definition)).body.id;
  await bulkRecords(objectId, big, BIG, VALUES, NAME);
  await bulkRecords(objectId, small, SMALL, VALUES, NAME);
  // Half of the small workspace's records are in the big one too.
  await env.DB.prepare(
    `INSERT INTO record_workspaces (record_id, workspace_id)
     SELECT record_id, ?1 FROM record_workspaces WHERE workspace_id = ?2 AND record_id % 2 = 0`,
  )
    .bind(big, small)
    .run();
}, 300_000);

const first = (workspaceId: number, body: Record<string, unknown>): Promise<Answer> =>
  queryRecords(viewer.key, workspaceId, { limit: 20, ...body });

/**
 * The first five pages (fewer when the walk ends sooner): each full but the last, whose cursor is
 * null, and each within `rows` rows read.
 */
async function pages(workspaceId: number, body: Record<string, unknown>, rows: number): Promise<number[]> {
  const reads: number[] = [];
  let answer = await first(workspaceId, body);
  for (let page = 1; page <= 5; page++) {
    expect([body, page, answer.status]).toEqual([body, page, 200]);
    const last = answer.body.nextCursor === null;
    if (!last) expect([body, page, answer.body.items.length]).toEqual([body, page, 20]);
    reads.push(rowsRead(answer));
    if (last) break;
    if (page < 5) answer = await first(workspaceId, { ...body, cursor: answer.body.nextCursor });
  }
  expect([body, reads.every((n) => n <= rows) ? 'within' : reads]).toEqual([body, 'within']);
  return reads;
}

describe(`${BIG} records beside ${SMALL}: full pages whose cost grows with the page`, () => {
  const sorts = ['updatedAt', 'createdAt', 'name', 'rank', 'code'];
  for (const field of sorts)
    for (const direction of ['asc', 'desc'])
      it(`sort by ${field} ${direction}: pages of 20 in order, each within ${SORT_ROWS} rows read`, async () => {
        for (const workspaceId of [big, small]) {
          await pages(workspaceId, { sort: [{ field, direction }] }, SORT_ROWS);
          // In order, ties by id in the sort's direction.
          const answer = await first(workspaceId, { sort: [{ field, direction }], limit: 100 });
          const key = (r: any): (string | number)[] => {
            const value =
              field === 'rank' || field === 'code'
                ? r.fieldValues.find((v: any) => v.fieldName === field)?.value
                : r[field];
            return [value, r.id];
          };
          const keys = answer.body.items.map(key);
          const sorted = [...keys].sort((a, b) => {
            const c = a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : (a[1] as number) - (b[1] as number);
            return direction === 'asc' ? c : -c;
          });
          expect(keys).toEqual(sorted);
        }
      });

  const searches: [string, number][] = [
    ['zyxw', 1],
    ['QUILLON zy', 1],
    ['ann1 smith', -1],
    ['smi', -1],
    ['a', -1],
    ['ölu', -1],
    ['ANN3 sMiThSo', -1],
  ];
  for (const [search, matches] of searches)
    it(`search "${search}": full pages by relevance, each within ${SEARCH_ROWS} rows read`, async () => {
      for (const workspaceId of [big, small]) {
        if (matches === 1) {
          const answer = await first(workspaceId, { search });
          expect(rowsRead(answer)).toBeLessThanOrEqual(SEARCH_ROWS);
          const names = answer.body.items.map((r: any) => r.name);
          expect(names).toEqual(workspaceId === big ? ['Quillon Zyxwvut'] : []);
          expect(answer.body.nextCursor).toBeNull();
        } else await pages(workspaceId, { search }, SEARCH_ROWS);
      }
    });

  it('an eq or in on an indexed field: full pages in id order, an eq within the sort bound, a count', async () => {
    for (const workspaceId of [big, small]) {
      await pages(workspaceId, { filter: { field: 'code', op: 'eq', value: 'c7' } }, SORT_ROWS);
      await pages(
        workspaceId,
        { filter: { field: 'code', op: 'eq', value: 'c7' }, sort: [{ field: 'id' }] },
        SORT_ROWS,
      );
    }
    const counted = await first(small, { filter: { field: 'code', op: 'eq', value: 'c7' }, count: true });
    expect(counted.body.count).toEqual({ value: SMALL / 50, exact: true });
    // An `in`: the values' entries walked together, in id order; every match once.
    const codes = { filter: { field: 'code', op: 'in', value: ['c7', 'c8', 'c9'] }, limit: 20 };
    await pages(big, codes, 3 * SORT_ROWS + 3 * (BIG / 50));
    const walked = await walkQuery(viewer.key, small, codes);
    const expected = await env.DB.prepare(
      `SELECT r.id FROM records r JOIN record_workspaces w ON w.record_id = r.id AND w.workspace_id = ?
       WHERE r.field_values ->> '$[1].value' IN ('c7', 'c8', 'c9') ORDER BY r.id`,
    )
      .bind(small)
      .all<{ id: number }>();
    expect(walked.ids).toEqual(expected.results.map((r) => r.id));
    expect(walked.pages).toBe(Math.ceil(expected.results.length / 20));
  });

  it('a search with a sort, and a search by id: full pages', async () => {
    for (const workspaceId of [big, small]) {
      await pages(workspaceId, { search: 'ann1', sort: [{ field: 'id' }] }, SEARCH_ROWS);
      await pages(workspaceId, { search: 'ann1 smith', sort: [{ field: 'updatedAt', direction: 'desc' }] }, 5_000);
    }
    const few = await first(big, { search: 'zyxwvut', sort: [{ field: 'name' }] });
    expect(few.body.items.map((r: any) => r.name)).toEqual(['Quillon Zyxwvut']);
  });
});

describe('walks over a workspace that is being written to', () => {
  it('every search and sort sees each record at most once, and every match left unchanged exactly once', async () => {
    const bodies: Record<string, unknown>[] = [
      { search: 'ann1', limit: 25 },
      { search: 'a', limit: 100 },
      { search: 'smi', sort: [{ field: 'id' }], limit: 50 },
      { sort: [{ field: 'updatedAt', direction: 'desc' }], limit: 100 },
      { sort: [{ field: 'updatedAt' }], limit: 100 },
      { sort: [{ field: 'createdAt', direction: 'desc' }], limit: 100 },
      { sort: [{ field: 'name' }], limit: 100 },
      { sort: [{ field: 'rank', direction: 'desc' }], limit: 100 },
      { filter: { field: 'code', op: 'eq', value: 'c3' }, limit: 5 },
    ];
    for (const body of bodies) {
      const all = await walkQuery(viewer.key, small, body);
      const before = new Set(all.ids);
      const changed = new Set<number>();
      let created = 0;
      // Between pages: two matches patched (rank and name change, so their keys move), one record created.
      const walk = await walkQuery(viewer.key, small, body, async (page) => {
        const victims = all.ids.filter((id) => !changed.has(id)).slice(page * 7, page * 7 + 2);
        for (const id of victims) {
          changed.add(id);
          const patched = await call('PATCH', `/workspaces/${small}/records/${id}`, {
            key: editor.key,
            body: { fieldValues: [fv('rank', 5000 + page), fv('code', 'c3')] },
          });
          expect(patched.status).toBe(200);
        }
        const made = await call('POST', '/records/batch', {
          key: editor.key,
          body: [{ objectId, fieldValues: [fv('rank', page), fv('code', 'c3')] }],
        });
        expect(made.status).toBe(201);
        created += 1;
      });
      const seen = walk.ids;
      expect([body, seen.length - new Set(seen).size]).toEqual([body, 0]);
      const unchanged = [...before].filter((id) => !changed.has(id));
      const missed = unchanged.filter((id) => !seen.includes(id));
      expect([body, missed]).toEqual([body, []]);
      expect(created).toBeGreaterThan(0);
    }
  }, 300_000);
});
