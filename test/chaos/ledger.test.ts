import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.ts';
import { newWriteId } from '../../src/core/ledger.ts';
import { Expiring } from '../../src/storage/isolate-cache.ts';
import { RecordWrites } from '../../src/storage/writes.ts';
import { RecordQueue, type PatchCall } from '../../src/write/record-queue.ts';
import { call, createOne, world } from '../integration/helpers.ts';
import { chaos, chaosEnv, type OutgoingCall } from './faults.ts';

/**
 * Each way a write used to be applied twice or answered wrongly when an object restarted
 * between committing and answering, replayed against the ledger that settles them now.
 */

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const stored = async (id: number) =>
  env.DB.prepare('SELECT version, field_values FROM records WHERE id = ?')
    .bind(id)
    .first<{ version: number; field_values: string }>();
const valuesOf = async (id: number) => JSON.parse((await stored(id))?.field_values ?? '[]');
const writesRecords = (c: OutgoingCall) =>
  c.target === 'd1' && c.method === 'batch' && c.sql.some((sql) => /UPDATE records|INSERT INTO records/.test(sql));
const nearCall = (c: OutgoingCall) => c.target === 'object' && c.method === 'run' && c.from === 'worker';
const forget = runInDurableObject as unknown as (stub: unknown, run: (instance: any) => void) => Promise<void>;

/** The object of `name` loses everything it held in memory, as after a restart. */
const restart = (name: string) =>
  forget(env.RECORDS.get(env.RECORDS.idFromName(name)), (instance) => {
    instance.queue = undefined;
    instance.answers = new Expiring(60_000, 10, () => Date.now());
  });

afterEach(() => {
  chaos.decide = undefined;
  chaos.onLost = undefined;
  chaos.delayMs = 0;
});

async function setup(n = 1) {
  const w = await world();
  const records = [];
  for (let i = 0; i < n; i++) records.push(await createOne(w.editor.key, w.object.id, [fv('firstName', `R${i}`)]));
  return { ...w, ids: records.map((r) => r.id as number) };
}

describe('one write ledger: a write is settled by its ledger row, never applied again', () => {
  it(
    'a resent call grouped with another patch, whose group commit first fails: the resent call is ' +
      'answered what it committed, the other is written',
    async () => {
      const { editor, ids } = await setup();
      const id = ids[0] as number;
      const def = (
        await call(
          'GET',
          `/admin/objects/${(await call('GET', `/records/${id}`, { key: editor.key })).body.objectId}`,
          {
            key: 'test-admin-token',
          },
        )
      ).body;
      const patch = (callId: string, age: number): PatchCall => ({
        recordId: id,
        writeId: callId,
        def,
        patch: { fieldValues: [fv('age', age)] },
        userId: editor.id,
      });
      const db = chaosEnv(env, 'object').DB;
      const queue = () => new RecordQueue(id, systemClock, (meter) => new RecordWrites(db, meter));
      // A first life of the record's queue commits A; its answer is lost with it.
      const a = patch(newWriteId(), 2);
      expect((await queue().patch(a)).record?.version).toBe(2);
      // A second life: C runs first (its read is slow), so A (sent again) and B queue behind it
      // and are grouped; that group's first commit fails before it runs, its retry meets A's row.
      let batches = 0;
      chaos.delayMs = 100;
      chaos.decide = (c) => {
        if (c.target === 'd1' && c.method === 'all' && c.sql.some((sql) => sql.includes('FROM records r')))
          return 'delay';
        if (writesRecords(c) && ++batches === 2) return 'fail';
        return undefined;
      };
      const second = queue();
      const c = second.patch(patch(newWriteId(), 3));
      const [resent, b] = [second.patch(a), second.patch(patch(newWriteId(), 4))];
      const answers = await Promise.all([c, resent, b]);
      expect(answers.map((answer) => [answer.status, answer.record?.version])).toEqual([
        [200, 3],
        [200, 2],
        [200, 4],
      ]);
      // A's answer is the state it committed: age 2 at version 2, though the record moved on.
      expect(answers[1]?.record?.fieldValues).toEqual([fv('firstName', 'R0'), fv('age', 2)]);
      expect([(await stored(id))?.version, await valuesOf(id)]).toEqual([4, [fv('firstName', 'R0'), fv('age', 4)]]);
      chaos.decide = undefined;
      expect((await second.patch(patch(newWriteId(), 5))).record?.version).toBe(5);
    },
  );

  it(
    'an unkeyed batch with an unchanged element, committed before its coordinator restarted, is not ' +
      'applied again over a later patch',
    async () => {
      const { editor, workspaceId, ids } = await setup(2);
      const [a, b] = ids as [number, number];
      let lost = 0;
      chaos.decide = (c) => (nearCall(c) && lost++ === 0 ? 'lose' : undefined);
      let between: any;
      chaos.onLost = async () => {
        for (const name of [String(a), String(b)]) await restart(name);
        between = await call('PATCH', `/workspaces/${workspaceId}/records/${b}`, {
          key: editor.key,
          body: { fieldValues: [fv('firstName', 'later')] },
        });
      };
      // b's element changes nothing: the batch wrote only a guard for it.
      const res = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [
          { id: a, fieldValues: [fv('age', 8)] },
          { id: b, fieldValues: [fv('firstName', 'R1')] },
        ],
      });
      // The batch's call (its answer lost), the patch between, the batch's call again.
      expect(lost).toBe(3);
      expect(res.status).toBe(200);
      expect(res.body.map((item: any) => [item.record.id, item.record.version])).toEqual([
        [a, 2],
        [b, 1],
      ]);
      expect(res.body[1].record.fieldValues).toEqual([fv('firstName', 'R1')]);
      expect(between.body.version).toBe(2);
      expect([(await stored(b))?.version, await valuesOf(b)]).toEqual([2, [fv('firstName', 'later')]]);
    },
  );

  it(
    'a keyed batch that changes nothing answers one body: its own answer, the replay and a retry all ' +
      'agree, and a later patch stays',
    async () => {
      const { editor, workspaceId, ids } = await setup(1);
      const [a] = ids as [number];
      const options = {
        key: editor.key,
        body: [{ id: a, fieldValues: [fv('firstName', 'R0')] }],
        headers: { 'Idempotency-Key': 'noop-batch' },
      };
      let lost = 0;
      let replay: any;
      chaos.decide = (c) =>
        lost === 0 &&
        writesRecords(c) &&
        c.from === 'object' &&
        c.sql.some((sql) => sql.includes('idempotency_keys')) &&
        ++lost
          ? 'lose'
          : undefined;
      chaos.onLost = async () => {
        await call('PATCH', `/workspaces/${workspaceId}/records/${a}`, {
          key: editor.key,
          body: { fieldValues: [fv('age', 1)] },
        });
        replay = await call('PATCH', '/records/batch', options);
      };
      const res = await call('PATCH', '/records/batch', options);
      expect(lost).toBe(1);
      expect(res.status).toBe(200);
      expect(replay.headers.get('Idempotent-Replayed')).toBe('true');
      expect(JSON.stringify(replay.body)).toBe(JSON.stringify(res.body));
      expect(res.body[0].record.version).toBe(1);
      const again = await call('PATCH', '/records/batch', options);
      expect(JSON.stringify(again.body)).toBe(JSON.stringify(res.body));
      expect([(await stored(a))?.version, await valuesOf(a)]).toEqual([2, [fv('firstName', 'R0'), fv('age', 1)]]);
    },
  );

  it(
    'a committed keyed patch with If-Match, re-run after its object restarted, answers 200 with what it' +
      ' committed, not 412',
    async () => {
      const { editor, workspaceId, ids } = await setup(1);
      const [a] = ids as [number];
      await call('GET', `/records/${a}`, { key: editor.key }); // remembered: a keyed patch runs near D1
      let lost = 0;
      chaos.decide = (c) => (nearCall(c) && lost++ === 0 ? 'lose' : undefined);
      chaos.onLost = () => restart(String(a));
      const res = await call('PATCH', `/workspaces/${workspaceId}/records/${a}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 3)] },
        headers: { 'If-Match': '"1"', 'Idempotency-Key': 'if-match-3' },
      });
      expect(lost).toBe(2);
      expect([res.status, res.body.version, res.body.fieldValues]).toEqual([
        200,
        2,
        [fv('firstName', 'R0'), fv('age', 3)],
      ]);
      expect((await stored(a))?.version).toBe(2);
    },
  );

  it(
    'a resent call that committed, whose ledger cannot be read in time, answers 503 outcome_unknown, ' +
      'never a plain "nothing written"',
    { timeout: 90_000 },
    async () => {
      const { editor, workspaceId, ids } = await setup(1);
      const [a] = ids as [number];
      await call('GET', `/records/${a}`, { key: editor.key }); // remembered: the Worker calls the record's object
      let lost = 0;
      chaos.decide = (c) => {
        if (c.target === 'object' && c.method === 'run' && c.from === 'worker' && lost++ === 0) return 'lose';
        if (
          lost > 0 &&
          c.target === 'd1' &&
          c.from === 'object' &&
          c.sql.some((sql) => sql.includes('FROM writes WHERE id IN'))
        )
          return 'fail';
        return undefined;
      };
      chaos.onLost = () => restart(String(a));
      const res = await call('PATCH', `/workspaces/${workspaceId}/records/${a}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 3)] },
      });
      expect(res.status).toBe(503);
      expect(res.body.title).toBe('Outcome unknown');
      expect((await stored(a))?.version).toBe(2);
    },
  );

  it('an Idempotency-Key is scoped to the operation, not to how its path was written', async () => {
    const { editor, workspaceId, ids } = await setup(1);
    const [a] = ids as [number];
    const body = { fieldValues: [fv('age', 3)] };
    const first = await call('PATCH', `/workspaces/${workspaceId}/records/${a}`, {
      key: editor.key,
      body,
      headers: { 'Idempotency-Key': 'scoped' },
    });
    const padded = await call('PATCH', `/workspaces/0${workspaceId}/records/00${a}`, {
      key: editor.key,
      body,
      headers: { 'Idempotency-Key': 'scoped' },
    });
    expect(first.body.version).toBe(2);
    expect([padded.status, padded.headers.get('Idempotent-Replayed'), JSON.stringify(padded.body)]).toEqual([
      200,
      'true',
      JSON.stringify(first.body),
    ]);
    expect((await stored(a))?.version).toBe(2);
  });
});
