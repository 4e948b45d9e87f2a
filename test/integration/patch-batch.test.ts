import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TENANT } from '../../src/domain/tenant.ts';
import type { RecordOut } from '../../src/schemas/record.ts';
import { Meter } from '../../src/storage/meter.ts';
import { Store } from '../../src/storage/store.ts';
import { RecordWrites, VersionConflict } from '../../src/storage/writes.ts';
import { call, countRows, createOne, expectProblem, newObject, newWorkspace, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const versions = async (ids: number[]) =>
  (
    await env.DB.prepare('SELECT id, version FROM records WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id')
      .bind(JSON.stringify(ids))
      .all()
  ).results;

async function three() {
  const w = await world();
  const records = [];
  for (const name of ['A', 'B', 'C']) records.push(await createOne(w.editor.key, w.object.id, [fv('firstName', name)]));
  return { ...w, records, ids: records.map((r) => r.id) };
}

describe('PATCH /records/batch and /workspaces/{id}/records/batch', () => {
  it('patches every element and answers items in request order', async () => {
    const { editor, workspaceId, records } = await three();
    for (const path of ['/records/batch', `/workspaces/${workspaceId}/records/batch`]) {
      const body = [
        { id: records[2].id, fieldValues: [fv('lastName', path)] },
        { id: records[0].id, fieldValues: [fv('age', path.length)] },
        { id: records[1].id },
      ];
      const res = await call('PATCH', path, { key: editor.key, body });
      expect(res.status).toBe(200);
      expect(res.body.map((item: any) => [item.status, item.record.id])).toEqual(body.map((b) => ['Succeeded', b.id]));
      for (const item of res.body) {
        const read = await call('GET', `/records/${item.record.id}`, { key: editor.key });
        expect(read.body).toEqual(item.record);
      }
    }
    const after = await call('GET', `/records/${records[2].id}`, { key: editor.key });
    expect(after.body).toMatchObject({ version: 3, name: `C /workspaces/${workspaceId}/records/batch` });
    // The element that changed nothing kept its version.
    expect((await call('GET', `/records/${records[1].id}`, { key: editor.key })).body.version).toBe(1);
  });

  it('writes nothing when any element fails, listing every failing element; status of the first', async () => {
    const { editor, workspaceId, ids } = await three();
    const hidden = await createOne(editor.key, (await newObject([await newWorkspace({ [editor.id]: 'editor' })])).id, [
      fv('firstName', 'H'),
    ]);
    await env.DB.prepare('UPDATE records SET deleted = 1, version = version + 1 WHERE id = ?').bind(ids[2]).run();
    const before = await versions([...ids, hidden.id]);
    const res = await call('PATCH', `/workspaces/${workspaceId}/records/batch`, {
      key: editor.key,
      body: [
        { id: ids[0], fieldValues: [fv('lastName', 'fine')] },
        { id: ids[1], fieldValues: [fv('age', 'x')], ownedBy: 12345 },
        { id: ids[2], fieldValues: [fv('lastName', 'deleted')] },
        { id: hidden.id, fieldValues: [fv('lastName', 'other workspace')] },
        { id: 999999 },
      ],
    });
    expectProblem(res, 422, 'unprocessable');
    expect(res.body.errors).toEqual([
      { pointer: '/1/ownedBy', code: 'not_editable', message: 'ownedBy cannot be changed' },
      { pointer: '/1/fieldValues/0/value', code: 'invalid_type', message: 'expected integer' },
      { pointer: '/2/id', code: 'record_deleted', message: 'a deleted record cannot be patched', status: 409 },
      { pointer: '/3/id', code: 'not_found', message: 'no such record', status: 404 },
      { pointer: '/4/id', code: 'not_found', message: 'no such record', status: 404 },
    ]);
    expect(await versions([...ids, hidden.id])).toEqual(before);

    const notFoundFirst = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: [{ id: 999999 }, { id: ids[1], fieldValues: [fv('age', 'x')] }],
    });
    expectProblem(notFoundFirst, 404, 'not_found');
    const deletedFirst = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: [{ id: ids[2] }, { id: 999999 }],
    });
    expectProblem(deletedFirst, 409, 'record_deleted');
    expect(await versions([...ids, hidden.id])).toEqual(before);
  });

  it('answers 403 for records the caller sees but may not change, writing nothing', async () => {
    const { editor, viewer, ids } = await three();
    const own = await newObject([await newWorkspace({ [viewer.id]: 'editor' })]);
    const mine = await createOne(viewer.key, own.id, [fv('firstName', 'V')]);
    const res = await call('PATCH', '/records/batch', {
      key: viewer.key,
      body: [
        { id: mine.id, fieldValues: [fv('lastName', 'x')] },
        { id: ids[0], fieldValues: [fv('lastName', 'x')] },
      ],
    });
    expectProblem(res, 403, 'forbidden');
    expect(res.body.errors).toEqual([
      { pointer: '/1/id', code: 'forbidden', message: 'you may not change this record' },
    ]);
    expect(await versions([mine.id, ids[0]])).toEqual(
      [
        { id: ids[0], version: 1 },
        { id: mine.id, version: 1 },
      ].sort((a, b) => a.id - b.id),
    );
    expect(editor.id).toBeGreaterThan(0);
  });

  it('rejects duplicate ids, bad sizes and shapes with 400 before anything else', async () => {
    const { editor, ids } = await three();
    const dup = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: [{ id: ids[0] }, { id: ids[1] }, { id: ids[0] }],
    });
    expectProblem(dup, 400, 'invalid_request');
    expect(dup.body.errors).toEqual([{ pointer: '/2/id', code: 'duplicate', message: 'id appears more than once' }]);
    for (const body of [[], Array.from({ length: 21 }, (_, i) => ({ id: i })), { id: 1 }]) {
      expectProblem(await call('PATCH', '/records/batch', { key: editor.key, body }), 400, 'invalid_request');
    }
    const shape = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: [{ fieldValues: [] }, { id: ids[0], fieldValues: [fv('a', 1), fv('a', 2)], name: 'x' }],
    });
    expect(shape.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/0/id', 'required'],
      ['/1/name', 'unknown_property'],
      ['/1/fieldValues/1/fieldName', 'duplicate'],
    ]);
    expect(await versions(ids)).toEqual(ids.map((id) => ({ id, version: 1 })));
  });

  it('counts a record under a workspace path only if shared with it', async () => {
    const { editor, ids } = await three();
    const other = await newWorkspace({ [editor.id]: 'editor' });
    const res = await call('PATCH', `/workspaces/${other}/records/batch`, {
      key: editor.key,
      body: [{ id: ids[0], fieldValues: [fv('lastName', 'x')] }],
    });
    expectProblem(res, 404, 'not_found');
    expect(await versions([ids[0]])).toEqual([{ id: ids[0], version: 1 }]);
  });
});

describe('a batch writes its rows as a few JSON statements, a record near its size bound alone', () => {
  it(
    'big and small, changed and unchanged elements: every state stored, change rows in the batch order,' +
      ' each as answered',
    async () => {
      const { editor, viewer, workspaceId } = await world();
      const fields = [
        ...Array.from({ length: 7 }, (_, i) => ({ name: `t${i}`, type: 'text' })),
        { name: 'n', type: 'number' },
      ];
      const object = await newObject([workspaceId], { nameTemplate: 'doc {n}', fields });
      // 700 000 characters: past what one statement's tuples may hold, so written on its own;
      // 300 000: two of them do not fit in one statement together.
      const texts = (count: number, letter: string) =>
        Array.from({ length: count }, (_, i) => fv(`t${i}`, letter.repeat(100_000)));
      const make = async (count: number, letter: string) =>
        (await createOne(editor.key, object.id, [...texts(count, letter), fv('n', 0)])).id as number;
      const [big1, small1, medium1, medium2, big2, small2] = [
        await make(7, 'a'),
        await make(0, 'b'),
        await make(3, 'c'),
        await make(3, 'd'),
        await make(7, 'e'),
        await make(0, 'f'),
      ];
      const start = (await call('GET', `/workspaces/${workspaceId}/changes?limit=1000`, { key: viewer.key })).body
        .nextCursor as string;

      const body = [big1, small1, medium1, medium2, big2].map((id, i) => ({
        id,
        fieldValues: [fv('n', 0.1 * (i + 1))],
      }));
      const res = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [...body, { id: small2, fieldValues: [fv('n', 0)] }],
      });
      expect(res.status).toBe(200);
      const answered = res.body.map((item: any) => item.record);
      expect(answered.map((r: any) => [r.id, r.version, r.name])).toEqual([
        [big1, 2, 'doc 0.1'],
        [small1, 2, 'doc 0.2'],
        [medium1, 2, 'doc 0.30000000000000004'],
        [medium2, 2, 'doc 0.4'],
        [big2, 2, 'doc 0.5'],
        [small2, 1, 'doc 0'],
      ]);
      for (const record of answered)
        expect((await call('GET', `/records/${record.id}`, { key: editor.key })).body).toEqual(record);
      const feed = await call('GET', `/workspaces/${workspaceId}/changes?after=${encodeURIComponent(start)}`, {
        key: viewer.key,
      });
      // Each change row holds what changed (the number and the name), not the record's 700 000 characters.
      expect(
        feed.body.items.map((item: any) => [item.type, item.recordId, item.version, item.fieldValues, item.name]),
      ).toEqual(
        answered
          .slice(0, 5)
          .map((record: any) => ['updated', record.id, 2, [fv('n', record.fieldValues.at(-1).value)], record.name]),
      );
    },
  );

  it(
    'the statements refuse a state computed on a stale version of any element, big or small, changed or' +
      ' not: nothing written',
    async () => {
      const { editor, workspaceId } = await world();
      const fields = [
        ...Array.from({ length: 7 }, (_, i) => ({ name: `t${i}`, type: 'text' })),
        { name: 'n', type: 'number' },
      ];
      const object = await newObject([workspaceId], { nameTemplate: 'doc {n}', fields });
      const big = (
        await createOne(editor.key, object.id, [
          ...Array.from({ length: 7 }, (_, i) => fv(`t${i}`, 'x'.repeat(100_000))),
          fv('n', 0),
        ])
      ).id as number;
      const small = (await createOne(editor.key, object.id, [fv('n', 0)])).id as number;
      for (const id of [big, small])
        expect(
          (
            await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
              key: editor.key,
              body: { fieldValues: [fv('n', 1)] },
            })
          ).status,
        ).toBe(200);
      const writes = new RecordWrites(env.DB, new Meter());
      const stored = await new Store(env.DB, new Meter(), DEFAULT_TENANT).getRecords([big, small]);
      const changesBefore = await countRows('changes');
      const attempt = (stale: number | undefined, staleChanges: boolean) => {
        const states = [big, small].map((id) => {
          const current = stored.get(id) as RecordOut;
          const base = id === stale ? { ...current, version: current.version - 1 } : current;
          return id === stale && !staleChanges
            ? { base }
            : { base, record: { ...base, version: base.version + 1, name: `v${base.version + 1}` } };
        });
        const changes = states.flatMap(({ base, record }) =>
          record === undefined ? [] : [{ type: 'updated' as const, prev: base, next: record }],
        );
        return writes.commit(writes.batchWrites(states, changes), [], Date.now() + 5_000);
      };
      for (const stale of [big, small]) {
        for (const staleChanges of [true, false]) {
          await expect(attempt(stale, staleChanges)).rejects.toBeInstanceOf(VersionConflict);
          expect(await versions([big, small])).toEqual([
            { id: big, version: 2 },
            { id: small, version: 2 },
          ]);
          expect(await countRows('changes')).toBe(changesBefore);
        }
      }
      // The same write on the current states goes through.
      await attempt(undefined, true);
      expect(await versions([big, small])).toEqual([
        { id: big, version: 3 },
        { id: small, version: 3 },
      ]);
      expect(await countRows('changes')).toBe(changesBefore + 2);
    },
  );
});
