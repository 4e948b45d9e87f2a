import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { restricting } from '../../src/storage/references.ts';
import {
  admin,
  bulkRecords,
  call,
  createOne,
  expectProblem,
  fv,
  newUser,
  newWorkspace,
  rowsRead,
  walkReferencedBy,
} from './helpers.ts';

/**
 * What references a record costs the one who asks: `GET /records/{id}/referenced-by` and a delete
 * of the record read rows by the page (or by the references that decide the delete), whatever
 * the references of records the caller cannot read, of deleted records, or by fields that let a
 * delete through.
 */

const MANY = 1_000;

let reader: { id: number; key: string };
let owner: { id: number; key: string };
let shared: number;
let hidden: number;
let company: number;
/** A hidden object: `company` lets deletes through, `holder` restricts them. */
let shipment: number;
/** A readable object whose `company` restricts deletes. */
let order: number;
/** A readable object whose `company` lets deletes through. */
let visit: number;

const referencing = (field: string, target: number): string =>
  `json_array(json_object('fieldName', '${field}', 'value', ${target}))`;

beforeAll(async () => {
  reader = await newUser('reader');
  owner = await newUser('owner');
  shared = await newWorkspace({ [reader.id]: 'editor', [owner.id]: 'editor' });
  hidden = await newWorkspace({ [owner.id]: 'editor' });
  const define = async (name: string, workspaceId: number, fields: unknown[]): Promise<number> =>
    (await admin('POST', '/admin/objects', { name, workspaceIds: [workspaceId], fields })).body.id;
  company = await define('Company', shared, [{ name: 'title', type: 'text' }]);
  shipment = await define('Shipment', hidden, [
    { name: 'company', type: 'reference', target: company, onDelete: 'keep' },
    { name: 'holder', type: 'reference', target: company },
  ]);
  order = await define('Order', shared, [{ name: 'company', type: 'reference', target: company }]);
  visit = await define('Visit', shared, [{ name: 'company', type: 'reference', target: company, onDelete: 'keep' }]);
}, 60_000);

/** A D1 binding that adds up the rows its batches read. */
function countingRows(): { db: D1Database; read: () => number } {
  let read = 0;
  const db = Object.create(env.DB) as D1Database;
  db.prepare = (query: string) => env.DB.prepare(query);
  db.batch = async <T>(statements: D1PreparedStatement[]) => {
    const results = await env.DB.batch<T>(statements);
    read += results.reduce((sum, result) => sum + (result.meta.rows_read ?? 0), 0);
    return results;
  };
  return { db, read: () => read };
}

/** Adds `n` records of `objectId` in `workspaceId` that reference `target` by `field`, written by the owner. */
const referrers = (objectId: number, workspaceId: number, field: string, target: number, n = MANY): Promise<void> =>
  bulkRecords(objectId, workspaceId, n, referencing(field, target), `'Ref ' || i`, owner.id);

const referencedBy = (id: number) => call('GET', `/records/${id}/referenced-by?limit=20`, { key: reader.key });
const remove = (id: number) => call('DELETE', `/workspaces/${shared}/records/${id}`, { key: reader.key });

describe(`${MANY} hidden and ${MANY} deleted referencing records cost their readers nothing`, () => {
  it('referenced-by reads by the page; a delete they do not decide reads as if they were not there', async () => {
    // The costs of a record nobody references and of one with one readable referencing record.
    const alone = await createOne(reader.key, company, [fv('title', 'Alone')]);
    const seen = await createOne(reader.key, company, [fv('title', 'Seen')]);
    await createOne(reader.key, visit, [fv('company', seen.id)]);
    const baseline = { list: rowsRead(await referencedBy(seen.id)), delete: rowsRead(await remove(alone.id)) };

    const target = await createOne(reader.key, company, [fv('title', 'Acme')]);
    const visible = await createOne(reader.key, visit, [fv('company', target.id)]);
    // Hidden and live (by a field that lets deletes through), and readable but deleted (by one that restricts).
    await referrers(shipment, hidden, 'company', target.id);
    await referrers(order, shared, 'company', target.id);
    await env.DB.prepare('UPDATE records SET deleted = 1, version = version + 1 WHERE object_id = ?').bind(order).run();

    const listed = await referencedBy(target.id);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      items: [{ recordId: visible.id, objectId: visit, field: 'company', name: visible.name }],
      nextCursor: null,
    });
    expect(rowsRead(listed)).toBeLessThanOrEqual(baseline.list + 20);

    const deleted = await remove(target.id);
    expect(deleted.status).toBe(200);
    expect(deleted.body.deleted).toBe(true);
    expect(rowsRead(deleted)).toBeLessThanOrEqual(baseline.delete + 20);
  });

  it('a delete that hidden live records hold back reads those references once each, names none', async () => {
    const target = await createOne(reader.key, company, [fv('title', 'Held')]);
    await referrers(shipment, hidden, 'holder', target.id);
    // Another thousand hidden ones that let deletes through, and a thousand deleted ones: never read.
    await referrers(shipment, hidden, 'company', target.id);
    const gone = await createOne(reader.key, company, [fv('title', 'Gone')]);
    await referrers(order, shared, 'company', gone.id);
    await env.DB.prepare('UPDATE records SET deleted = 1, version = version + 1 WHERE object_id = ? AND deleted = 0')
      .bind(order)
      .run();
    const readable = await createOne(reader.key, order, [fv('company', target.id)]);

    const refused = await remove(target.id);
    expectProblem(refused, 409, 'record_referenced');
    expect(refused.body.detail).toBe(`${MANY + 1} live records reference this record; change or delete them first.`);
    expect(refused.body.errors).toEqual([
      {
        recordId: readable.id,
        code: 'record_referenced',
        message: `record ${readable.id} of object ${order} references it by company`,
      },
    ]);
    // What the refusal reads to explain itself: the references that decide it, about one row each.
    const counted = countingRows();
    expect(await restricting(counted.db, target.id, [shared], 20)).toMatchObject({ count: MANY + 1 });
    expect(counted.read()).toBeLessThanOrEqual(MANY + 50);
    expect((await referencedBy(target.id)).body.items.map((r: { recordId: number }) => r.recordId)).toEqual([
      readable.id,
    ]);
  });

  it('pages of referenced-by walk every readable referencing record once, whatever is hidden', async () => {
    const target = await createOne(reader.key, company, [fv('title', 'Paged')]);
    await referrers(shipment, hidden, 'company', target.id);
    await referrers(visit, shared, 'company', target.id, 45);
    await referrers(shipment, hidden, 'holder', target.id);
    const expected = await env.DB.prepare(
      `SELECT id FROM records WHERE object_id = ? AND field_values ->> '$[0].value' = ? ORDER BY id`,
    )
      .bind(visit, target.id)
      .all<{ id: number }>();
    const walked = await walkReferencedBy(reader.key, target.id, 20);
    const seen = walked.items.map((r) => r.recordId);
    const reads = walked.rowsRead;
    expect(seen).toEqual(expected.results.map((r) => r.id));
    expect(reads).toHaveLength(3);
    expect(reads.filter((n) => n > 200)).toEqual([]);
  });
});
