import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ROUTE } from '../../src/tenancy/routes.ts';
import { createContext } from '../../src/context.ts';
import { sha256Hex } from '../../src/http/auth.ts';
import { runWrite } from '../../src/write/engine.ts';
import { call, createOne, letMemoryExpire, world, type Answer } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const SERVER_TIMING = new RegExp(
  String.raw`^d1;dur=(\d+\.\d);desc="(\d+) round trips?", do;dur=(\d+\.\d);desc="(\d+) calls?"` +
    String.raw`(, rows;desc="(\d+) written, (\d+) read")?$`,
);

function work(answer: Answer): { d1: number; calls: number } {
  const match = SERVER_TIMING.exec(answer.headers.get('Server-Timing') ?? '');
  if (match === null) throw new Error(`bad Server-Timing: ${answer.headers.get('Server-Timing')}`);
  return { d1: Number(match[2]), calls: Number(match[4]) };
}

describe('cost budget per operation, from Server-Timing', () => {
  it(
    'create batch of 1 and of 20: one read round trip and one write round trip; no read while the ' +
      'isolate remembers',
    async () => {
      const { editor, object } = await world();
      const create = (size: number) =>
        call('POST', '/records/batch', {
          key: editor.key,
          body: Array.from({ length: size }, () => ({ objectId: object.id, fieldValues: [fv('firstName', 'x')] })),
        });
      for (const size of [1, 20]) {
        letMemoryExpire();
        const res = await create(size);
        expect(res.status).toBe(201);
        expect(work(res)).toEqual({ d1: 2, calls: 0 });
        const again = await create(size);
        expect(again.body).toHaveLength(size);
        expect(work(again)).toEqual({ d1: 1, calls: 0 });
      }
    },
  );

  it(
    'patch one: one call from the Worker and at most two D1 round trips, counted inside the object too;' +
      ' one when both remember',
    async () => {
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'x')]);
      const patch = (age: number) =>
        call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
          key: editor.key,
          body: { fieldValues: [fv('age', age)] },
        });
      // New records are not remembered: the Worker reads the record first (a record the caller
      // cannot see must cost no object call), then the record's object takes its turn and writes.
      const first = await patch(1);
      expect(first.body.version).toBe(2);
      expect(work(first)).toEqual({ d1: 2, calls: 1 });
      expect(first.headers.get('Server-Timing')).toMatch(/desc="1 call"/);
      // Both remember: only the write.
      const second = await patch(2);
      expect(second.body.version).toBe(3);
      expect(work(second)).toEqual({ d1: 1, calls: 1 });
      // Nothing remembered in the Worker, not even the caller: its read, then the object's write.
      letMemoryExpire();
      const third = await patch(3);
      expect(third.body.version).toBe(4);
      expect(work(third)).toEqual({ d1: 2, calls: 1 });
      // A patch that changes nothing does not write; the object checks what it remembers instead.
      const noop = await patch(3);
      expect(noop.body).toEqual(third.body);
      expect(work(noop)).toEqual({ d1: 1, calls: 1 });
    },
  );

  it(
    "patch batch of 20: one call to a coordinator near D1 (its first record's object, which takes that " +
      "record's turn in its own queue), no call to the other records' objects, and at most 3 D1 round trips",
    async () => {
      const { editor, object } = await world();
      const ids: number[] = [];
      for (let i = 0; i < 20; i++) ids.push((await createOne(editor.key, object.id, [fv('firstName', `r${i}`)])).id);
      const res = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: ids.map((id) => ({ id, fieldValues: [fv('age', 1)] })),
      });
      expect(res.status).toBe(200);
      const { d1, calls } = work(res);
      expect(d1).toBeLessThanOrEqual(3);
      expect(calls).toBe(1);

      const context = createContext(env, 'budget', {
        waitUntil() {},
        passThroughOnException() {},
        props: {},
      } as unknown as ExecutionContext);
      // The same batch run by the engine outside any record's object: no record's object is called.
      const answer = await runWrite(context, {
        id: 'budget-batch',
        requestId: 'budget',
        tenant: DEFAULT_ROUTE,
        keyHash: await sha256Hex(editor.key),
        write: { kind: 'batch', items: ids.map((id) => ({ id, fieldValues: [fv('age', 2)] })) },
      });
      expect(answer.status).toBe(200);
      expect(context.meter.doCalls).toBe(0);
      expect(context.meter.d1Trips).toBe(2);
    },
  );

  it('a keyed patch of a record in use: one object call, whose coordinator writes in its own queue', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'x')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 1)] } });
    const keyed = (age: number, key: string) =>
      call('PATCH', path, {
        key: editor.key,
        body: { fieldValues: [fv('age', age)] },
        headers: { 'Idempotency-Key': key },
      });
    const first = await keyed(2, 'budget-keyed-1');
    expect([first.status, first.body.version, first.body.fieldValues]).toEqual([
      200,
      3,
      [fv('firstName', 'x'), fv('age', 2)],
    ]);
    // The Worker's call to the record's object; the object's claim, then its group's write.
    expect(work(first)).toEqual({ d1: 2, calls: 1 });
    const replayed = await keyed(2, 'budget-keyed-1');
    expect([replayed.body, replayed.headers.get('Idempotent-Replayed')]).toEqual([first.body, 'true']);
    const read = await call('GET', path, { key: editor.key });
    expect(read.body.version).toBe(3);
  });

  it(
    'a list page and a feed page: one D1 round trip each, the caller read with the page (never ' + 'remembered)',
    async () => {
      const { editor, workspaceId, object } = await world();
      const made = [
        await createOne(editor.key, object.id, [fv('firstName', 'x')]),
        await createOne(editor.key, object.id, [fv('firstName', 'y')]),
      ];
      // The isolate's first page also reads the cursor key (once per isolate; see cursors.test.ts).
      await call('GET', `/workspaces/${workspaceId}/records`, { key: editor.key });
      for (const path of [`/workspaces/${workspaceId}/records?limit=1`, `/workspaces/${workspaceId}/changes?limit=1`]) {
        const first = await call('GET', path, { key: editor.key });
        expect(work(first)).toEqual({ d1: 1, calls: 0 });
        const next = await call(
          'GET',
          `${path}&${path.includes('changes') ? 'after' : 'cursor'}=${encodeURIComponent(first.body.nextCursor)}`,
          { key: editor.key },
        );
        expect(work(next)).toEqual({ d1: 1, calls: 0 });
        const seen = [first, next].map((page) => page.body.items[0]);
        expect(seen.map((item) => (item.record ?? item).id)).toEqual(made.map((record) => record.id));
      }
    },
  );

  it(
    'a patch after a batch wrote its record: a fresh read and the write (two D1 round trips), not a ' +
      'refused write and a redo (three)',
    async () => {
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'x')]);
      const path = `/workspaces/${workspaceId}/records/${record.id}`;
      // The object knows version 2.
      await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 1)] } });
      const batch = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [{ id: record.id, fieldValues: [fv('age', 2)] }],
      });
      expect(batch.body[0].record.version).toBe(3);
      const after = await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 3)] } });
      expect([after.body.version, after.body.fieldValues]).toEqual([4, [fv('firstName', 'x'), fv('age', 3)]]);
      expect(work(after)).toEqual({ d1: 2, calls: 1 });
    },
  );

  it(
    'every answer carries both entries; a 404 leaves the rows out (they would tell a hidden record from' + ' none)',
    async () => {
      const res = await call('GET', '/nowhere');
      expect(work(res)).toEqual({ d1: 0, calls: 0 });
      expect(res.headers.get('Server-Timing')).not.toContain('rows;');
      expect((await call('GET', '/health')).headers.get('Server-Timing')).toContain('rows;');
    },
  );
});
