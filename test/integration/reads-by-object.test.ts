import { beforeAll, describe, expect, it } from 'vitest';
import { admin, bulkRecords, call, newUser, newWorkspace, queryRecords, rowsRead } from './helpers.ts';

/**
 * One object's records beside many of another's in the same workspace read like a workspace of
 * their own: a list by object walks that object's records, not the workspace's.
 */

const FLIGHTS = 10_000;
const AIRPORTS = 30;

let viewer: { id: number; key: string };
let workspaceId: number;
let airports: number;
let flights: number;

beforeAll(async () => {
  viewer = await newUser('viewer');
  workspaceId = await newWorkspace({ [viewer.id]: 'viewer' });
  const define = async (name: string) =>
    (
      await admin('POST', '/admin/objects', {
        name,
        workspaceIds: [workspaceId],
        fields: [{ name: 'code', type: 'text' }],
      })
    ).body.id as number;
  airports = await define('Airport');
  flights = await define('Flight');
  const values = (prefix: string) => `json_array(json_object('fieldName', 'code', 'value', '${prefix}' || i))`;
  // Half the airports come before the flights, half after: ids interleave as imports over time make them.
  await bulkRecords(airports, workspaceId, AIRPORTS / 2, values('A'));
  await bulkRecords(flights, workspaceId, FLIGHTS, values('F'));
  await bulkRecords(airports, workspaceId, AIRPORTS / 2, values('B'));
}, 120_000);

const list = (query: string) => call('GET', `/workspaces/${workspaceId}/records?${query}`, { key: viewer.key });

describe('a list of one object beside another of many records', () => {
  it('answers every record of the object in id order, reading rows in proportion to them', async () => {
    const answer = await list(`objectId=${airports}&limit=50`);
    expect(answer.status).toBe(200);
    const items = answer.body.items as { id: number; objectId: number }[];
    expect(items).toHaveLength(AIRPORTS);
    expect(items.every((record) => record.objectId === airports)).toBe(true);
    expect(items.map((record) => record.id)).toEqual([...items.map((record) => record.id)].sort((a, b) => a - b));
    expect(answer.body.nextCursor).toBeNull();
    // Before, the walk read the workspace's 10,030 records to find 30.
    expect(rowsRead(answer)).toBeLessThan(20 * AIRPORTS);
  });

  it('pages through them with cursors, each record once, and a field filter reads no flight', async () => {
    const ids: number[] = [];
    let cursor: string | null = null;
    do {
      const answer: Awaited<ReturnType<typeof list>> = await list(
        `objectId=${airports}&limit=7${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      expect(answer.status).toBe(200);
      expect(rowsRead(answer)).toBeLessThan(20 * AIRPORTS);
      ids.push(...(answer.body.items as { id: number }[]).map((record) => record.id));
      cursor = answer.body.nextCursor;
    } while (cursor !== null);
    expect(new Set(ids).size).toBe(AIRPORTS);
    expect(ids).toHaveLength(AIRPORTS);

    const filtered = await list(`objectId=${airports}&field.code=B3`);
    expect(filtered.body.items.map((record: { fieldValues: unknown }) => record.fieldValues)).toEqual([
      [{ fieldName: 'code', value: 'B3' }],
    ]);
    expect(rowsRead(filtered)).toBeLessThan(20 * AIRPORTS);
  });

  it('lists the object of many records as before, and the workspace as a whole', async () => {
    const many = await list(`objectId=${flights}&limit=100`);
    expect(many.body.items).toHaveLength(100);
    expect(many.body.items.every((record: { objectId: number }) => record.objectId === flights)).toBe(true);
    const all = await list('limit=100');
    const objects = new Set(all.body.items.map((record: { objectId: number }) => record.objectId));
    // The first 100 by id: the first 15 airports, then flights.
    expect([...objects].sort()).toEqual([airports, flights].sort());
  });
});

describe('a query that requires one object beside another of many records', () => {
  const ofAirports = () => ({ field: 'objectId', op: 'eq', value: airports });

  it('answers them all with an exact count, reading rows in proportion to them', async () => {
    const answer = await queryRecords(viewer.key, workspaceId, { filter: ofAirports(), count: true, limit: 50 });
    expect(answer.status).toBe(200);
    expect(answer.body.items).toHaveLength(AIRPORTS);
    expect(answer.body.count).toEqual({ value: AIRPORTS, exact: true });
    expect(answer.body.nextCursor).toBeNull();
    expect(rowsRead(answer)).toBeLessThan(20 * AIRPORTS);
  });

  it('fills its first page in any order, by name or by creation, newest first', async () => {
    for (const sort of [[{ field: 'name' }], [{ field: 'createdAt', direction: 'desc' }]]) {
      const answer = await queryRecords(viewer.key, workspaceId, { filter: ofAirports(), sort, limit: 20 });
      expect([sort, answer.status, answer.body.items.length]).toEqual([sort, 200, 20]);
      expect(answer.body.items.every((record: { objectId: number }) => record.objectId === airports)).toBe(true);
      expect(rowsRead(answer)).toBeLessThan(20 * AIRPORTS);
    }
  });

  it('with another condition no index holds, still reads only the object', async () => {
    const answer = await queryRecords(viewer.key, workspaceId, {
      filter: { and: [ofAirports(), { field: 'code', op: 'startsWith', value: 'B' }] },
      count: true,
    });
    expect(answer.body.items).toHaveLength(AIRPORTS / 2);
    expect(answer.body.count).toEqual({ value: AIRPORTS / 2, exact: true });
    expect(rowsRead(answer)).toBeLessThan(20 * AIRPORTS);
  });

  it('an `in` of a few objects walks each, together in id order, each record once', async () => {
    const one = await queryRecords(viewer.key, workspaceId, {
      filter: { field: 'objectId', op: 'in', value: [airports] },
      count: true,
      limit: 50,
    });
    expect([one.body.items.length, one.body.count]).toEqual([AIRPORTS, { value: AIRPORTS, exact: true }]);
    expect(rowsRead(one)).toBeLessThan(20 * AIRPORTS);
    const both = await queryRecords(viewer.key, workspaceId, {
      filter: { field: 'objectId', op: 'in', value: [flights, airports, airports] },
      count: true,
      limit: 100,
    });
    expect(both.body.count).toEqual({ value: FLIGHTS + AIRPORTS, exact: true });
    const ids = both.body.items.map((record: { id: number }) => record.id);
    expect(ids).toEqual([...new Set<number>(ids)].sort((a, b) => a - b));
    expect(ids).toHaveLength(100);
  });
});
