import { abortAllDurableObjects } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { RecordWrites } from '../../src/storage/writes.ts';
import { BatchLane } from '../../src/write/batch-lane.ts';
import { RecordQueue } from '../../src/write/record-queue.ts';
import { admin, call, createOne, newObject, newUser, newWorkspace } from './helpers.ts';
import { database, mover, movingTenant, stepMove } from './moving.ts';

/**
 * Batches of one isolate that share records take turns (the lane), and the lane only orders:
 * what D1 holds still decides every commit. The record objects run in this isolate, so the test
 * sees the lane as batches enter it, and can hold one record's turn or one batch's commit back
 * (patches queued on a busy record, a slow D1).
 */

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const batch = (key: string, items: unknown[], headers: Record<string, string> = {}) =>
  call('PATCH', '/records/batch', { key, body: items, headers });

async function setup(records: number) {
  const editor = await newUser();
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const object = await newObject([workspaceId], {
    nameTemplate: undefined,
    fields: Array.from({ length: 4 }, (_, i) => ({ name: `f${i}`, type: 'integer' })),
  });
  const ids: number[] = [];
  for (let i = 0; i < records; i++) ids.push((await createOne(editor.key, object.id, [])).id);
  return { editor, workspaceId, ids };
}

/** The lane of the batches, caught as they enter it: the records batches may wait behind. */
const lanes = new Set<BatchLane>();
/** How many batches entered the lane so far. */
let entered = 0;
const enter = BatchLane.prototype.enter;
BatchLane.prototype.enter = function (this: BatchLane, ids: readonly number[], now?: number) {
  lanes.add(this);
  entered++;
  return enter.call(this, ids, now);
};
const inLane = () => [...lanes].reduce((n, lane) => n + lane.size, 0);

const turn = RecordQueue.prototype.turn;
const commit = RecordWrites.prototype.commit;
afterEach(() => {
  RecordQueue.prototype.turn = turn;
  RecordWrites.prototype.commit = commit;
});

/** Record `id`'s queue grants a batch its turn only once `gate` opens; `asked` tells when one asked. */
function holdTurn(id: number) {
  let open = (): void => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const state = { asked: false, open };
  RecordQueue.prototype.turn = function (this: RecordQueue, version: number) {
    if ((this as unknown as { recordId: number }).recordId !== id) return turn.call(this, version);
    state.asked = true;
    return gate.then(() => turn.call(this, version));
  };
  return state;
}

/** The next commit of a write (a batch's) waits until `open()`: the batch holds its place in the lane meanwhile. */
function holdNextCommit() {
  let open = (): void => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const state = { held: false, open };
  RecordWrites.prototype.commit = function (this: RecordWrites, ...args: Parameters<typeof commit>) {
    if (state.held || args[1].length === 0) return commit.apply(this, args);
    state.held = true;
    return gate.then(() => commit.apply(this, args));
  } as typeof commit;
  return state;
}

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(ok()).toBe(true);
};

describe('the batch lane', () => {
  it("a batch waiting for its own record's turn holds no place: a batch of its other record goes first", async () => {
    const { editor, ids } = await setup(2);
    const [a, b] = ids as [number, number];
    const held = holdTurn(a);
    // The first runs in a's object and waits there for a's turn (patches queued on a busy record).
    const first = batch(
      editor.key,
      [a, b].map((id) => ({ id, fieldValues: [fv('f0', 1)] })),
    );
    await until(() => held.asked);
    expect(inLane()).toBe(0);
    // The second names b alone: it commits while the first still waits, at its first try.
    const second = await batch(editor.key, [{ id: b, fieldValues: [fv('f1', 2)] }]);
    expect(second.status).toBe(200);
    expect(second.body[0].record.version).toBe(2);
    expect(second.headers.get('Server-Timing')).toMatch(/"2 round trips"/);
    held.open();
    // The first then meets b moved on, and is decided again on it: both values kept.
    const one = await first;
    expect(one.status).toBe(200);
    expect(one.body.map((item: any) => item.record.version)).toEqual([2, 3]);
    const read = await call('GET', `/records/${b}`, { key: editor.key });
    expect([read.body.version, read.body.fieldValues]).toEqual([3, [fv('f0', 1), fv('f1', 2)]]);
    expect(inLane()).toBe(0);
  });

  it('a batch that waited starts from what the one before it committed: one read, one commit', async () => {
    const { editor, ids } = await setup(3);
    const [a, b, c] = ids as [number, number, number];
    const held = holdNextCommit();
    const first = batch(
      editor.key,
      [a, b].map((id) => ({ id, fieldValues: [fv('f0', 1)] })),
    );
    await until(() => held.held);
    expect(inLane()).toBe(2);
    const second = batch(
      editor.key,
      [b, c].map((id) => ({ id, fieldValues: [fv('f1', 2)] })),
    );
    await until(() => inLane() === 3);
    held.open();
    const [one, two] = await Promise.all([first, second]);
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(two.headers.get('Server-Timing')).toMatch(/"2 round trips"/);
    expect(two.body.map((item: any) => item.record.version)).toEqual([3, 2]);
    const read = await call('GET', `/records/${b}`, { key: editor.key });
    expect([read.body.version, read.body.fieldValues]).toEqual([3, [fv('f0', 1), fv('f1', 2)]]);
    expect(inLane()).toBe(0);
  });

  it('a state handed on never shows the next caller a field its role hides', async () => {
    const boss = await newUser('boss');
    const clerk = await newUser('clerk');
    const workspaceId = await newWorkspace({ [boss.id]: 'editor' });
    const object = await newObject([workspaceId], {
      nameTemplate: undefined,
      fields: [
        { name: 'f0', type: 'integer' },
        { name: 'secret', type: 'text' },
      ],
    });
    const role = await admin('POST', '/admin/roles', {
      name: 'clerk',
      objects: [{ objectId: object.id, read: true, update: true, fields: { secret: 'hidden' } }],
    });
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${clerk.id}`, { roleId: role.body.id });
    const a = (await createOne(boss.key, object.id, [])).id as number;
    const b = (await createOne(boss.key, object.id, [])).id as number;
    const held = holdNextCommit();
    const first = batch(
      boss.key,
      [a, b].map((id) => ({ id, fieldValues: [fv('secret', 'S3CRET')] })),
    );
    await until(() => held.held);
    const before = entered;
    const second = batch(
      clerk.key,
      [b, a].map((id) => ({ id, fieldValues: [fv('f0', 7)] })),
    );
    await until(() => entered === before + 1);
    held.open();
    const [one, two] = await Promise.all([first, second]);
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(two.body.map((item: any) => item.record.version)).toEqual([3, 3]);
    expect(JSON.stringify(two.body)).not.toMatch(/S3CRET|secret/);
    const read = await call('GET', `/records/${a}`, { key: boss.key });
    expect(read.body.fieldValues).toEqual([fv('f0', 7), fv('secret', 'S3CRET')]);
    expect(inLane()).toBe(0);
  });

  it('a batch before it refused (a unique clash) hands on nothing; keyed batches and replays leave too', async () => {
    const editor = await newUser();
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const object = await newObject([workspaceId], {
      nameTemplate: undefined,
      fields: [
        { name: 'f0', type: 'integer' },
        { name: 'code', type: 'text', unique: true },
      ],
    });
    const [r1, r2, r3] = [
      (await createOne(editor.key, object.id, [fv('code', 'dup')])).id as number,
      (await createOne(editor.key, object.id, [])).id as number,
      (await createOne(editor.key, object.id, [])).id as number,
    ];
    const held = holdNextCommit();
    const refused = batch(editor.key, [
      { id: r3, fieldValues: [fv('f0', 1)] },
      { id: r2, fieldValues: [fv('code', 'dup')] },
    ]);
    await until(() => held.held);
    const next = batch(editor.key, [{ id: r3, fieldValues: [fv('f0', 2)] }], { 'Idempotency-Key': 'lane-1' });
    await until(() => inLane() === 2);
    held.open();
    const [no, yes] = await Promise.all([refused, next]);
    expect(no.status).toBe(409);
    expect(yes.status).toBe(200);
    expect(yes.body[0].record.version).toBe(2);
    const replay = await batch(editor.key, [{ id: r3, fieldValues: [fv('f0', 2)] }], { 'Idempotency-Key': 'lane-1' });
    expect([replay.status, replay.headers.get('Idempotent-Replayed')]).toEqual([200, 'true']);
    const read = await call('GET', `/records/${r3}`, { key: editor.key });
    expect([read.body.version, read.body.fieldValues]).toEqual([2, [fv('f0', 2)]]);
    expect((await call('GET', `/records/${r1}`, { key: editor.key })).body.version).toBe(1);
    expect(inLane()).toBe(0);
  });

  it('an object reset in the lane: the next batch of its records still commits on what D1 holds', async () => {
    const { editor, ids } = await setup(2);
    const [a, b] = ids as [number, number];
    const held = holdNextCommit();
    const first = batch(
      editor.key,
      [a, b].map((id) => ({ id, fieldValues: [fv('f0', 1)] })),
    );
    await until(() => held.held);
    await abortAllDurableObjects();
    held.open();
    await first;
    const next = await batch(editor.key, [{ id: b, fieldValues: [fv('f1', 2)] }]);
    expect(next.status).toBe(200);
    const read = await call('GET', `/records/${b}`, { key: editor.key });
    expect(read.body.version).toBe(next.body[0].record.version);
    expect(read.body.fieldValues).toContainEqual(fv('f1', 2));
  });
});

describe('a batch whose records left its database', () => {
  it('is refused as the move refuses any write there (503, nothing written), and commits when sent again', async () => {
    const tenant = await movingTenant('DB_2');
    await mover(tenant.id).hold();
    const a = (await createOne(tenant.key, tenant.objectId, [fv('firstName', 'A')])).id as number;
    const b = (await createOne(tenant.key, tenant.objectId, [fv('firstName', 'B')])).id as number;
    const items = [a, b].map((id) => ({ id, fieldValues: [fv('firstName', 'X')] }));
    // Read on DB_2, then held in a's turn while the tenant moves to DB_3 and its rows leave DB_2.
    const held = holdTurn(a);
    const first = batch(tenant.key, items);
    await until(() => held.asked);
    const started = await admin('POST', `/tenants/${tenant.id}/move`, { database: 'DB_3' });
    expect((await stepMove(tenant.id, started.body.id)).status).toBe('succeeded');
    held.open();
    const one = await first;
    expect(one.status).toBe(503);
    expect(one.body.title).toBe('Tenant moved');
    const stored = () => database('DB_3').prepare('SELECT version, name FROM records WHERE id = ?').bind(a).first();
    expect(await stored()).toEqual({ version: 1, name: 'A' });
    const again = await batch(tenant.key, items);
    expect(again.status).toBe(200);
    expect(await stored()).toEqual({ version: 2, name: 'X' });
  });
});
