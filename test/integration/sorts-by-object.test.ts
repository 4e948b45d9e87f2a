import { beforeAll, describe, expect, it } from 'vitest';
import { admin, bulkRecords, newUser, newWorkspace, queryRecords, rowsRead } from './helpers.ts';

/**
 * A sort of one object's records (more than a thousand) by a key along which another object's many
 * records all come first: the walk of the workspace's key meets none of them within its bound, so
 * SQL orders the object's own records and every page is full.
 */

const OTHERS = 10_000;
const GATES = 1_200;

let viewer: { id: number; key: string };
let workspaceId: number;
let gates: number;

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
  const flights = await define('Flight');
  gates = await define('Gate');
  const values = (prefix: string) => `json_array(json_object('fieldName', 'code', 'value', '${prefix}' || i))`;
  // Flights are named "Bulk …", gates "Zulu …": by name every flight comes first. Both are created
  // at times 1, 2, …, so newest first the flights past the last gate's time come first.
  await bulkRecords(flights, workspaceId, OTHERS, values('F'));
  await bulkRecords(gates, workspaceId, GATES, values('G'), `'Zulu ' || printf('%05d', i)`);
}, 120_000);

const ofGates = { field: 'objectId', op: 'eq', value: 0 };

describe('a sort of one object whose records another object outnumbers along the key', () => {
  it('fills every page, each record once and in order, by name and newest first', async () => {
    const filter = { ...ofGates, value: gates };
    for (const sort of [[{ field: 'name' }], [{ field: 'createdAt', direction: 'desc' }]]) {
      const seen: { id: number; name: string; createdAt: number }[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const answer = await queryRecords(viewer.key, workspaceId, {
          filter,
          sort,
          limit: 100,
          ...(cursor === undefined ? {} : { cursor }),
        });
        expect([answer.status, answer.body.errors]).toEqual([200, undefined]);
        const items = answer.body.items as { id: number; name: string; createdAt: number; objectId: number }[];
        // Every page but the last is full, and holds gates only.
        if (answer.body.nextCursor) expect(items).toHaveLength(100);
        expect(items.every((item) => item.objectId === gates)).toBe(true);
        expect(rowsRead(answer)).toBeLessThan(30_000);
        seen.push(...items);
        cursor = answer.body.nextCursor ?? undefined;
        pages += 1;
      } while (cursor !== undefined && pages < 30);
      expect(pages).toBe(GATES / 100);
      expect(new Set(seen.map((r) => r.id)).size).toBe(GATES);
      const key = (r: (typeof seen)[number]) => (sort[0]?.field === 'name' ? r.name : -r.createdAt);
      const ordered = [...seen].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
      expect(seen.map(key)).toEqual(ordered.map(key));
      if (sort[0]?.field === 'name') expect(seen[0]?.name).toBe('Zulu 00001');
    }
  });
});
