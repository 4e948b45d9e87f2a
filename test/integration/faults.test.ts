import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ROUTE } from '../../src/tenancy/routes.ts';
import type { TurnAnswer } from '../../src/write/record-queue.ts';
import type { WriteAnswer, WriteCall } from '../../src/write/write.ts';
import { sha256Hex } from '../../src/http/auth.ts';
import { Meter } from '../../src/storage/meter.ts';
import { RecordWrites, VersionConflict } from '../../src/storage/writes.ts';
import { call, createOne, expectProblem, world } from './helpers.ts';
import { TURN_TIMEOUT_MS } from '../../src/write/deadlines.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const versions = async (ids: number[]) =>
  (
    await env.DB.prepare(
      'SELECT id, version, field_values FROM records WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id',
    )
      .bind(JSON.stringify(ids))
      .all()
  ).results;
/** The record's object, with the plain answer types (RPC stub types lose `unknown` values). */
const objectOf = (id: number) => {
  const stub = env.RECORDS.get(env.RECORDS.idFromName(String(id)));
  return {
    run: async (call: WriteCall) => {
      const answer = (await stub.run(call)) as WriteAnswer;
      return { status: answer.status, body: JSON.parse(new TextDecoder().decode(answer.body)) };
    },
    turn: async (version: number) => (await stub.turn(id, version)) as TurnAnswer,
  };
};

async function records(n: number) {
  const w = await world();
  const list = [];
  for (let i = 0; i < n; i++) list.push(await createOne(w.editor.key, w.object.id, [fv('firstName', `R${i}`)]));
  return { ...w, list, ids: list.map((r) => r.id as number) };
}

describe('faults', () => {
  it('a batch whose D1 write fails part-way leaves every record as it was and every object usable', async () => {
    const { editor, list, ids } = await records(4);
    const last = ids[3] as number;
    await env.DB.exec(
      `CREATE TRIGGER injected_failure BEFORE UPDATE ON records WHEN NEW.id = ${last} BEGIN SELECT ` +
        `RAISE(ABORT, 'injected'); END`,
    );
    const before = await versions(ids);
    const res = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: ids.map((id) => ({ id, fieldValues: [fv('lastName', 'x')] })),
    });
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.body)).not.toContain('injected');
    expect(await versions(ids)).toEqual(before);
    await env.DB.exec('DROP TRIGGER injected_failure');
    // Every object still serves turns at once, and knows nothing that was not committed.
    for (const record of list)
      expect(await objectOf(record.id).turn(1)).toEqual({ granted: true, work: { d1Trips: 0, d1Ms: 0 } });
    const next = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: ids.map((id) => ({ id, fieldValues: [fv('lastName', 'y')] })),
    });
    expect(next.status).toBe(200);
    expect(next.body.map((item: any) => item.record.version)).toEqual([2, 2, 2, 2]);
  });

  it('D1 itself refuses a stale write, and a batch holding one stale write writes nothing', async () => {
    const { list } = await records(2);
    const [a, b] = list;
    const writes = new RecordWrites(env.DB, new Meter());
    const soon = Date.now() + 1000;
    await expect(
      writes.commit([writes.update({ ...a, version: 2, name: 'stale' }, { ...a, version: 0 })], [], soon),
    ).rejects.toBeInstanceOf(VersionConflict);
    await expect(
      writes.commit(
        [
          writes.update({ ...a, version: 2, name: 'good' }, a),
          writes.update({ ...b, version: 3, name: 'stale' }, { ...b, version: 2 }),
        ],
        [],
        soon,
      ),
    ).rejects.toBeInstanceOf(VersionConflict);
    // A guard of an unchanged record passes only at its version, and changes nothing.
    await expect(writes.commit([writes.guard(a.id, 2)], [], soon)).rejects.toBeInstanceOf(VersionConflict);
    await writes.commit([writes.guard(a.id, 1)], [], soon);
    // An update that does not raise the version is refused too.
    await expect(env.DB.prepare('UPDATE records SET name = ? WHERE id = ?').bind('sneaky', a.id).run()).rejects.toThrow(
      /version_conflict/,
    );
    expect((await versions([a.id, b.id])).map((r: any) => r.version)).toEqual([1, 1]);
    await writes.commit([writes.update({ ...a, version: 2, name: 'good' }, a)], [], soon);
    expect((await versions([a.id]))[0]).toMatchObject({ version: 2 });
  });

  it(
    "a write behind the object's back (a twin, an expired lease) is detected and built upon, not " + 'overwritten',
    async () => {
      const { editor, workspaceId, list } = await records(1);
      const id = list[0].id;
      const path = `/workspaces/${workspaceId}/records/${id}`;
      expect((await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 1)] } })).body.version).toBe(
        2,
      );
      // Another writer moves the record to version 3 directly in D1.
      await env.DB.prepare(
        `UPDATE records SET version = 3, field_values = ` +
          `json('[{"fieldName":"firstName","value":"R0"},{"fieldName":"lastName","value":"twin"},` +
          `{"fieldName":"age","value":1}]') ` +
          `WHERE id = ?`,
      )
        .bind(id)
        .run();
      const res = await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 2)] } });
      expect(res.body.version).toBe(4);
      expect(res.body.fieldValues).toEqual([fv('firstName', 'R0'), fv('lastName', 'twin'), fv('age', 2)]);
      expect((await call('GET', `/records/${id}`, { key: editor.key })).body).toEqual(res.body);
    },
  );

  it("a batch's turn comes after the patches queued before it, and sees their result", async () => {
    const { editor, workspaceId, list } = await records(1);
    const record = list[0];
    const keyHash = await sha256Hex(editor.key);
    const stub = objectOf(record.id);
    const patch = (age: number) =>
      stub.run({
        id: crypto.randomUUID(),
        requestId: `turn-${age}`,
        tenant: DEFAULT_ROUTE,
        keyHash,
        write: { kind: 'patch', recordId: record.id, workspaceId, patch: { fieldValues: [fv('age', age)] } },
      });
    // A first patch, so the object remembers the caller and the record: the next ones are queued
    // without reading D1 first, in the order they were sent, before the batch's turn.
    expect((await patch(0)).body.version).toBe(2);
    const patches = [1, 2, 3].map(patch);
    // The patches reach the record's queue (each is decided first: a few steps of the runner)
    // before the batch asks for its turn: once the first has committed, the others have long been
    // queued behind it, and the turn comes after them.
    while (((await versions([record.id]))[0]?.version as number) < 3)
      await new Promise((resolve) => setTimeout(resolve, 1));
    const turn = stub.turn(2);
    const answers = await Promise.all(patches);
    expect(answers.map((a) => a.body.version)).toEqual([3, 4, 5]);
    const seen = await turn;
    expect(seen.newer).toEqual(answers[2]?.body);
    // A batch that already read that state gets no state back.
    expect((await stub.turn(5)).newer).toBeUndefined();
  });

  it("an object that remembers a state older than a batch's write never answers from it without checking", async () => {
    const { editor, workspaceId, list } = await records(1);
    const id = list[0].id;
    const path = `/workspaces/${workspaceId}/records/${id}`;
    // The object remembers version 2 (age 1); a batch then writes version 3 behind its back.
    expect((await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 1)] } })).body.version).toBe(
      2,
    );
    expect(
      (await call('PATCH', '/records/batch', { key: editor.key, body: [{ id, fieldValues: [fv('lastName', 'B')] }] }))
        .body[0].record.version,
    ).toBe(3);
    // A no-op on the remembered state must not answer it: it is checked against D1 first.
    const noop = await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 1)] } });
    expect(noop.body).toMatchObject({
      version: 3,
      fieldValues: [fv('firstName', 'R0'), fv('lastName', 'B'), fv('age', 1)],
    });
    expect((await call('GET', `/records/${id}`, { key: editor.key })).body).toEqual(noop.body);
    // Nor an If-Match refusal: version 3 is the current one.
    const another = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: [{ id, fieldValues: [fv('lastName', 'C')] }],
    });
    expect(another.body[0].record.version).toBe(4);
    const matched = await call('PATCH', path, {
      key: editor.key,
      body: { fieldValues: [fv('age', 2)] },
      headers: { 'If-Match': '"4"' },
    });
    expect(matched.body).toMatchObject({
      version: 5,
      fieldValues: [fv('firstName', 'R0'), fv('lastName', 'C'), fv('age', 2)],
    });
  });

  it(
    'a record that cannot take its turn for 10 s answers 503 with Retry-After, and nothing is written',
    { timeout: 40_000 },
    async () => {
      const { editor, workspaceId, ids } = await records(3);
      const [stuck, other] = ids as [number, number];
      // Every write of one record loses, as to a writer that always comes first.
      await env.DB.exec(
        `CREATE TRIGGER always_conflict BEFORE UPDATE ON records WHEN NEW.id = ${stuck} BEGIN SELECT ` +
          `RAISE(ABORT, 'version_conflict'); END`,
      );
      const before = await versions(ids);
      const start = Date.now();
      const [single, batch] = await Promise.all([
        call('PATCH', `/workspaces/${workspaceId}/records/${stuck}`, {
          key: editor.key,
          body: { fieldValues: [fv('age', 1)] },
        }),
        call('PATCH', '/records/batch', {
          key: editor.key,
          body: [
            { id: other, fieldValues: [fv('age', 2)] },
            { id: stuck, fieldValues: [fv('age', 3)] },
          ],
        }),
      ]);
      expect(Date.now() - start).toBeGreaterThanOrEqual(TURN_TIMEOUT_MS);
      for (const answer of [single, batch]) {
        expectProblem(answer, 503, 'unavailable');
        expect(answer.headers.get('Retry-After')).toBe('1');
      }
      expect(await versions(ids)).toEqual(before);
      await env.DB.exec('DROP TRIGGER always_conflict');
      const next = await call('PATCH', `/workspaces/${workspaceId}/records/${stuck}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 4)] },
      });
      expect(next.body).toMatchObject({ version: 2, fieldValues: [fv('firstName', 'R0'), fv('age', 4)] });
    },
  );
});
