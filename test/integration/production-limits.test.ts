import { describe, expect, it } from 'vitest';
import { checkStatement } from '../limits.ts';
import { call, createOne, newObject, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

describe('every accepted request is stored and replayed under production D1 limits', () => {
  it('the test build refuses what production refuses: long SQL, 101 parameters, a 2 MB value', () => {
    expect(() => checkStatement('SELECT 1', ['x'.repeat(2_000_001)])).toThrow(/SQLITE_TOOBIG/);
    expect(() => checkStatement('SELECT 1', ['é'.repeat(1_000_001)])).toThrow(/SQLITE_TOOBIG/);
    expect(() =>
      checkStatement(
        'SELECT 1',
        Array.from({ length: 101 }, () => 1),
      ),
    ).toThrow(/SQLITE_TOOBIG/);
    expect(() => checkStatement(`SELECT '${'x'.repeat(100_001)}'`, [])).toThrow(/SQLITE_TOOBIG/);
    expect(() => checkStatement('SELECT 1', ['x'.repeat(1_999_999)])).not.toThrow();
  });

  it(
    'a keyed batch of 20 records near 1 MiB each, and a keyed create near 1 MiB of multi-byte text, are written ' +
      'and replayed byte for byte',
    { timeout: 120_000 },
    async () => {
      const { editor, workspaceId } = await world();
      // Text values hold at most 100,000 characters: a record near 1 MiB spreads over ten of them.
      const bodies = Array.from({ length: 10 }, (_, i) => ({ name: `body${i}`, type: 'text' }));
      const object = await newObject([workspaceId], {
        nameTemplate: '{title}',
        fields: [{ name: 'title', type: 'text' }, ...bodies, { name: 'n', type: 'integer' }],
      });
      const near1MiB = (letter: string, count: number) => bodies.map(({ name }) => fv(name, letter.repeat(count)));
      const title = '😀'.repeat(10_000);
      const keyedCreate = {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('title', title), ...near1MiB('é', 50_000), fv('n', 0)] }],
        headers: { 'Idempotency-Key': 'big-create' },
      };
      const created = await call('POST', '/records/batch', keyedCreate);
      expect(created.status).toBe(201);
      expect(created.body[0].record.name).toBe(title);
      const replayedCreate = await call('POST', '/records/batch', keyedCreate);
      expect([replayedCreate.headers.get('Idempotent-Replayed'), JSON.stringify(replayedCreate.body)]).toEqual([
        'true',
        JSON.stringify(created.body),
      ]);

      const ids: number[] = [];
      for (let i = 0; i < 20; i++)
        ids.push(
          (await createOne(editor.key, object.id, [fv('title', `r${i}`), ...near1MiB('x', 100_000), fv('n', 0)])).id,
        );
      const options = {
        key: editor.key,
        body: ids.map((id) => ({ id, fieldValues: [fv('n', 1)] })),
        headers: { 'Idempotency-Key': 'big-batch' },
      };
      const batch = await call('PATCH', '/records/batch', options);
      expect(batch.status).toBe(200);
      expect(batch.body.map((item: any) => item.record.version)).toEqual(ids.map(() => 2));
      const replayed = await call('PATCH', '/records/batch', options);
      expect(replayed.headers.get('Idempotent-Replayed')).toBe('true');
      expect(JSON.stringify(replayed.body)).toBe(JSON.stringify(batch.body));
      for (const id of [ids[0], ids[19]])
        expect((await call('GET', `/records/${id}`, { key: editor.key })).body).toEqual(
          batch.body.find((item: any) => item.record.id === id).record,
        );
    },
  );

  it(
    'a keyed batch of 20 records of mixed scripts near 1 MiB each is answered and replayed byte for byte: ' +
      'an answer crosses an object call as UTF-8, not as two bytes a character',
    { timeout: 180_000 },
    async () => {
      const { editor, workspaceId } = await world();
      const bodies = Array.from({ length: 10 }, (_, i) => ({ name: `body${i}`, type: 'text' }));
      const object = await newObject([workspaceId], {
        nameTemplate: '{title}',
        fields: [{ name: 'title', type: 'text' }, ...bodies, { name: 'n', type: 'integer' }],
      });
      // 94,500 characters a value, one of every 27 outside Latin-1: 101,500 bytes of UTF-8, but
      // 189,000 bytes as V8 sends a string holding such a character. Ten values: about 1 MiB a record.
      const mixed = (i: number) => `abcdefghijklmnopqrstuvwxy${i % 10}語`.repeat(3_500);
      const ids: number[] = [];
      for (let i = 0; i < 20; i++) {
        const values = bodies.map(({ name }) => fv(name, mixed(i)));
        ids.push((await createOne(editor.key, object.id, [fv('title', `記録 ${i} 😀`), ...values, fv('n', 0)])).id);
      }
      const options = {
        key: editor.key,
        body: ids.map((id) => ({ id, fieldValues: [fv('n', 1)] })),
        headers: { 'Idempotency-Key': 'big-mixed-batch' },
      };
      const batch = await call('PATCH', '/records/batch', options);
      expect(batch.status).toBe(200);
      const text = JSON.stringify(batch.body);
      expect(new TextEncoder().encode(text).byteLength).toBeGreaterThan(20_000_000);
      expect(text.length * 2).toBeGreaterThan(32 * 1024 * 1024);
      expect(batch.body.map((item: any) => item.record.version)).toEqual(ids.map(() => 2));
      const replayed = await call('PATCH', '/records/batch', options);
      expect(replayed.headers.get('Idempotent-Replayed')).toBe('true');
      expect(JSON.stringify(replayed.body)).toBe(text);
      const read = await call('GET', `/records/${ids[7]}`, { key: editor.key });
      expect(read.body).toEqual(batch.body[7].record);
      expect(read.body.fieldValues[3]).toEqual(fv('body2', mixed(7)));
    },
  );

  it('a patch of every large value of a 1 MiB record is written, and rebuilt after a later one', async () => {
    const { editor, workspaceId } = await world();
    const bodies = Array.from({ length: 10 }, (_, i) => ({ name: `body${i}`, type: 'text' }));
    const object = await newObject([workspaceId], {
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }, ...bodies],
    });
    const values = (letter: string) => bodies.map(({ name }) => fv(name, letter.repeat(99_990)));
    const record = await createOne(editor.key, object.id, [fv('title', 'big'), ...values('a')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const keyed = { key: editor.key, body: { fieldValues: values('b') }, headers: { 'Idempotency-Key': 'all-of-it' } };
    const patched = await call('PATCH', path, keyed);
    expect(patched.status).toBe(200);
    expect(patched.body.fieldValues[1]).toEqual(fv('body0', 'b'.repeat(99_990)));
    // A later patch: the key's answer is the first patch's state, rebuilt by undoing the later one.
    expect((await call('PATCH', path, { key: editor.key, body: { fieldValues: values('c') } })).status).toBe(200);
    const replayed = await call('PATCH', path, keyed);
    expect(replayed.headers.get('Idempotent-Replayed')).toBe('true');
    expect(JSON.stringify(replayed.body)).toBe(JSON.stringify(patched.body));
  });
});
