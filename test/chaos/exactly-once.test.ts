import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { Expiring } from '../../src/storage/isolate-cache.ts';
import { call, createOne, expectProblem, world } from '../integration/helpers.ts';
import { chaos, type OutgoingCall } from './faults.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const writesRecords = (c: OutgoingCall) =>
  c.target === 'd1' && c.method === 'batch' && c.sql.some((sql) => /UPDATE records|INSERT INTO records/.test(sql));
const stored = async (id: number) =>
  env.DB.prepare('SELECT version, field_values, deleted FROM records WHERE id = ?')
    .bind(id)
    .first<{ version: number; field_values: string }>();
const changeCount = async (id: number) =>
  (await env.DB.prepare('SELECT count(*) AS n FROM changes WHERE record_id = ?').bind(id).first<{ n: number }>())?.n;

/** Faults for the calls `which` picks, the first `times` of them: the call runs, its reply is lost. */
function loseReplies(which: (c: OutgoingCall) => boolean, times = Infinity): { lost: number } {
  const count = { lost: 0 };
  chaos.decide = (c) => {
    if (!which(c) || count.lost >= times) return undefined;
    count.lost++;
    return 'lose';
  };
  return count;
}

/** runInDurableObject, typed loosely: the record object's RPC types are too deep for the checker. */
const forget = runInDurableObject as unknown as (stub: unknown, run: (instance: unknown) => void) => Promise<void>;

afterEach(() => {
  chaos.decide = undefined;
  chaos.onLost = undefined;
  chaos.delayMs = 0;
});

async function setup(n = 1) {
  const w = await world();
  const records = [];
  for (let i = 0; i < n; i++) records.push(await createOne(w.editor.key, w.object.id, [fv('firstName', `R${i}`)]));
  // Records in use: the Worker remembers them, so a patch goes from the Worker to the record's
  // object (a record it does not remember is patched through a coordinator near D1, see below).
  for (const record of records) await call('GET', `/records/${record.id}`, { key: w.editor.key });
  return { ...w, records, ids: records.map((r) => r.id as number) };
}

describe('exactly once when replies are lost', () => {
  it(
    'a patch whose object answer is lost is sent again and applied once: consecutive versions, one ' + 'change each',
    async () => {
      const { editor, workspaceId, ids } = await setup();
      const id = ids[0] as number;
      // Every Worker → object patch call runs, and its first reply is lost.
      const lost = loseReplies((c) => c.target === 'object' && c.method === 'run' && c.from === 'worker', 3);
      const answers = [];
      for (const age of [1, 2, 3])
        answers.push(
          await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
            key: editor.key,
            body: { fieldValues: [fv('age', age)] },
          }),
        );
      expect(lost.lost).toBe(3);
      expect(answers.map((a) => [a.status, a.body.version])).toEqual([
        [200, 2],
        [200, 3],
        [200, 4],
      ]);
      expect((await stored(id))?.version).toBe(4);
      expect(await changeCount(id)).toBe(4); // created + 3 updates
      expect((await call('GET', `/records/${id}`, { key: editor.key })).body).toEqual(answers[2]?.body);
    },
  );

  it('20 concurrent patches with every object reply lost once: versions 2..21, each answered once', async () => {
    const { editor, workspaceId, ids } = await setup();
    const id = ids[0] as number;
    loseReplies((c) => c.target === 'object' && c.method === 'run' && c.from === 'worker', 20);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
          key: editor.key,
          body: { fieldValues: [fv('lastName', `v${i}`)] },
        }),
      ),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.map((a) => a.body.version).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 2),
    );
    expect((await stored(id))?.version).toBe(21);
  });

  it(
    'an object whose D1 write committed but whose reply was lost does not write again, and answers 200 ' +
      '(even under If-Match)',
    async () => {
      const { editor, workspaceId, ids } = await setup();
      const id = ids[0] as number;
      const lost = loseReplies((c) => writesRecords(c) && c.from === 'object', 1);
      const res = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 7)] },
        headers: { 'If-Match': '"1"' },
      });
      expect(lost.lost).toBe(1);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ version: 2, fieldValues: [fv('firstName', 'R0'), fv('age', 7)] });
      expect((await stored(id))?.version).toBe(2);
      expect(await changeCount(id)).toBe(2);
    },
  );

  it('a batch whose D1 commit reply was lost answers 200, written once', async () => {
    const { editor, ids } = await setup(3);
    // A batch commits from its coordinator object, near D1.
    const lost = loseReplies((c) => writesRecords(c) && c.from === 'object', 1);
    const res = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: ids.map((id) => ({ id, fieldValues: [fv('age', 5)] })),
    });
    expect(lost.lost).toBe(1);
    expect(res.status).toBe(200);
    expect(res.body.map((item: any) => item.record.version)).toEqual([2, 2, 2]);
    for (const id of ids) {
      expect((await stored(id))?.version).toBe(2);
      expect(await changeCount(id)).toBe(2);
    }
  });

  it('a create whose D1 reply was lost answers 201 with the records it made, made once', async () => {
    const { editor, object } = await setup(0);
    const before = (await env.DB.prepare('SELECT count(*) AS n FROM records').first<{ n: number }>())?.n;
    loseReplies((c) => writesRecords(c), 1);
    const res = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        { objectId: object.id, fieldValues: [fv('firstName', 'A')] },
        { objectId: object.id, fieldValues: [fv('firstName', 'B')] },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body.map((item: any) => item.record.name)).toEqual(['A', 'B']);
    expect((await env.DB.prepare('SELECT count(*) AS n FROM records').first<{ n: number }>())?.n).toBe(
      (before ?? 0) + 2,
    );
    for (const item of res.body)
      expect((await call('GET', `/records/${item.record.id}`, { key: editor.key })).body).toEqual(item.record);
  });

  it(
    'an object that forgot a call it wrote (a restart) answers the committed state when the call comes ' + 'again',
    async () => {
      const { editor, workspaceId, ids } = await setup();
      const id = ids[0] as number;
      // The object writes, then "restarts" (forgets its calls and state) before the Worker hears back.
      const lost = loseReplies((c) => c.target === 'object' && c.method === 'run' && c.from === 'worker', 1);
      let forgot = 0;
      // Runs in the Worker's request, so the stub is made there (a stub belongs to its request).
      chaos.onLost = () =>
        forget(env.RECORDS.get(env.RECORDS.idFromName(String(id))), (instance: any) => {
          instance.answers = new Expiring(60_000, 10, () => Date.now());
          instance.queue = undefined;
          forgot++;
        });
      const res = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 9)] },
      });
      expect([lost.lost, forgot]).toEqual([1, 1]);
      expect(res.status).toBe(200);
      expect(res.body.version).toBe(2);
      expect((await stored(id))?.version).toBe(2);
      expect(await changeCount(id)).toBe(2);
    },
  );

  it(
    'answers 503 only when the outcome cannot be learned, and then a retry with the same Idempotency-Key tells ' +
      'the truth',
    { timeout: 30_000 },
    async () => {
      const { editor, workspaceId, ids } = await setup();
      const id = ids[0] as number;
      // The object's write commits and its reply is lost; every later attempt fails before it runs,
      // so the object cannot learn within its 10 s whether the first went through.
      let attempts = 0;
      chaos.decide = (c) =>
        writesRecords(c) && c.from === 'object' ? (attempts++ === 0 ? 'lose' : 'fail') : undefined;
      const path = `/workspaces/${workspaceId}/records/${id}`;
      const first = await call('PATCH', path, {
        key: editor.key,
        body: { fieldValues: [fv('age', 4)] },
        headers: { 'Idempotency-Key': 'k-503' },
      });
      expectProblem(first, 503, 'unavailable');
      expect(first.headers.get('Retry-After')).toBe('1');
      expect(first.body.title).toBe('Outcome unknown');
      expect(attempts).toBeGreaterThan(2);
      chaos.decide = undefined;
      // It did commit (the replies were lost after D1 wrote), once.
      expect((await stored(id))?.version).toBe(2);
      const retry = await call('PATCH', path, {
        key: editor.key,
        body: { fieldValues: [fv('age', 4)] },
        headers: { 'Idempotency-Key': 'k-503' },
      });
      expect(retry.status).toBe(200);
      expect(retry.headers.get('Idempotent-Replayed')).toBe('true');
      expect(retry.body.version).toBe(2);
      expect((await stored(id))?.version).toBe(2);
    },
  );
});

describe('one bad patch never fails another', () => {
  it(
    '40 concurrent patches of one record, one refused by storage: 39 written, 1 answered 422, nothing ' +
      'of it stored',
    async () => {
      const { editor, workspaceId, ids } = await setup();
      const id = ids[0] as number;
      // A refusal our checks do not foresee: storage aborts any write holding this value.
      await env.DB.exec(
        `CREATE TRIGGER poison BEFORE INSERT ON changes WHEN NEW.data LIKE '%poison%' BEGIN SELECT ` +
          `RAISE(ABORT, 'poisoned'); END`,
      );
      try {
        const answers = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
              key: editor.key,
              body: { fieldValues: [fv('lastName', i === 17 ? 'poison' : `ok${i}`)] },
            }),
          ),
        );
        expect(answers.filter((a) => a.status === 200)).toHaveLength(39);
        expectProblem(answers[17] as any, 422, 'unprocessable');
        expect(answers[17]?.body.errors[0].code).toBe('storage_refused');
        expect(
          answers
            .filter((a) => a.status === 200)
            .map((a) => a.body.version)
            .sort((a, b) => a - b),
        ).toEqual(Array.from({ length: 39 }, (_, i) => i + 2));
        const row = await stored(id);
        expect(row?.version).toBe(40);
        expect(row?.field_values).not.toContain('poison');
      } finally {
        await env.DB.exec('DROP TRIGGER poison');
      }
    },
  );
});

describe('a batch answers what D1 holds at its commit', () => {
  it(
    "an element that changes nothing is guarded: a patch committed between the batch's read and write " +
      'shows in its answer',
    async () => {
      const { editor, workspaceId, ids } = await setup(2);
      const [a, b] = ids as [number, number];
      chaos.delayMs = 400;
      let delayed = false;
      let held = (): void => undefined;
      const batchHeld = new Promise<void>((resolve) => (held = resolve));
      chaos.decide = (c) => {
        if (!delayed && writesRecords(c)) {
          delayed = true;
          held();
          return 'delay';
        }
        return undefined;
      };
      const batch = call('PATCH', '/records/batch', {
        key: editor.key,
        body: [
          { id: a, fieldValues: [fv('age', 1)] },
          { id: b, fieldValues: [fv('firstName', 'R1')] },
        ],
      });
      // The single patch is sent once the batch's commit is held back (whatever the machine's load).
      await batchHeld;
      const single = await call('PATCH', `/workspaces/${workspaceId}/records/${b}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 2)] },
      });
      expect(single.body.version).toBe(2);
      const res = await batch;
      expect(res.status).toBe(200);
      expect(res.body[1].record).toEqual((await call('GET', `/records/${b}`, { key: editor.key })).body);
      expect(res.body[1].record.version).toBe(2);
    },
  );
});

describe('Idempotency-Key while the first request runs', () => {
  it('the same key during the first request answers 409 with Retry-After: 1, then the stored answer', async () => {
    const { editor, workspaceId, ids } = await setup();
    const id = ids[0] as number;
    chaos.delayMs = 500;
    chaos.decide = (c) => (writesRecords(c) && c.from === 'object' ? 'delay' : undefined);
    const path = `/workspaces/${workspaceId}/records/${id}`;
    const options = { key: editor.key, body: { fieldValues: [fv('age', 3)] }, headers: { 'Idempotency-Key': 'slow' } };
    const first = call('PATCH', path, options);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = await call('PATCH', path, options);
    expectProblem(second, 409, 'conflict');
    expect(second.headers.get('Retry-After')).toBe('1');
    const done = await first;
    expect(done.status).toBe(200);
    const third = await call('PATCH', path, options);
    expect(third.headers.get('Idempotent-Replayed')).toBe('true');
    expect(third.body).toEqual(done.body);
    expect((await stored(id))?.version).toBe(2);
  });
});

describe('batches and keyed writes run in a coordinator near D1, exactly once', () => {
  /**
   * Every object that may have coordinated (the records', the shared ones) forgets the calls it
   * answered, as after a restart.
   */
  const restartCoordinators = (ids: readonly number[]) => async (): Promise<void> => {
    for (const name of [...ids.map(String), ...Array.from({ length: 16 }, (_, n) => `writes:${n}`)]) {
      await forget(env.RECORDS.get(env.RECORDS.idFromName(name)), (instance: any) => {
        instance.answers = new Expiring(60_000, 10, () => Date.now());
      });
    }
  };
  const nearCall = (c: OutgoingCall) => c.target === 'object' && c.method === 'run' && c.from === 'worker';

  it('a batch whose coordinator answer is lost is sent again and answered from its memory: written once', async () => {
    const { editor, ids } = await setup(3);
    const lost = loseReplies(nearCall, 1);
    const res = await call('PATCH', '/records/batch', {
      key: editor.key,
      body: ids.map((id) => ({ id, fieldValues: [fv('age', 5)] })),
    });
    expect(lost.lost).toBe(1);
    expect(res.status).toBe(200);
    expect(res.body.map((item: any) => [item.record.version, item.record.fieldValues])).toEqual(
      ids.map((_, i) => [2, [fv('firstName', `R${i}`), fv('age', 5)]]),
    );
    for (const id of ids) {
      expect((await stored(id))?.version).toBe(2);
      expect(await changeCount(id)).toBe(2);
    }
  });

  it(
    'a keyed batch whose coordinator restarted after committing replays its stored answer when sent ' + 'again',
    async () => {
      const { editor, ids } = await setup(2);
      const lost = loseReplies(nearCall, 1);
      chaos.onLost = restartCoordinators(ids);
      const options = {
        key: editor.key,
        body: ids.map((id) => ({ id, fieldValues: [fv('age', 8)] })),
        headers: { 'Idempotency-Key': 'near-restart' },
      };
      const res = await call('PATCH', '/records/batch', options);
      expect(lost.lost).toBe(1);
      expect(res.status).toBe(200);
      expect(res.headers.get('Idempotent-Replayed')).toBe('true');
      expect(res.body.map((item: any) => item.record.version)).toEqual([2, 2]);
      for (const id of ids) expect([(await stored(id))?.version, await changeCount(id)]).toEqual([2, 2]);
      chaos.decide = undefined;
      expect((await call('PATCH', '/records/batch', options)).body).toEqual(res.body);
    },
  );

  it(
    'an unkeyed batch whose coordinator restarted after committing runs again and finds itself applied:' +
      ' same versions, nothing written twice',
    async () => {
      const { editor, ids } = await setup(2);
      const lost = loseReplies(nearCall, 1);
      chaos.onLost = restartCoordinators(ids);
      const res = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: ids.map((id) => ({ id, fieldValues: [fv('age', 8)] })),
      });
      expect(lost.lost).toBe(1);
      expect(res.status).toBe(200);
      expect(res.body.map((item: any) => item.record.version)).toEqual([2, 2]);
      for (const id of ids) expect([(await stored(id))?.version, await changeCount(id)]).toEqual([2, 2]);
    },
  );

  it(
    '…and when another write changed a record meanwhile, answers what the batch committed, from its ' +
      'ledger row, without applying it again',
    async () => {
      const { editor, workspaceId, ids } = await setup(2);
      const [a] = ids as [number, number];
      const lost = loseReplies(nearCall, 1);
      let between: { body: any } | undefined;
      chaos.onLost = async () => {
        await restartCoordinators(ids)();
        between = await call('PATCH', `/workspaces/${workspaceId}/records/${a}`, {
          key: editor.key,
          body: { fieldValues: [fv('age', 6)] },
        });
      };
      const res = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: ids.map((id) => ({ id, fieldValues: [fv('age', 8)] })),
      });
      expect(lost.lost).toBe(1);
      expect(res.status).toBe(200);
      expect(res.body.map((item: any) => [item.record.version, item.record.fieldValues])).toEqual(
        ids.map((_, i) => [2, [fv('firstName', `R${i}`), fv('age', 8)]]),
      );
      expect(between?.body.version).toBe(3);
      // The batch's write (v2) and the patch (v3) each once; the batch was not applied over the patch.
      expect([
        (await stored(a))?.version,
        await changeCount(a),
        JSON.parse((await stored(a))?.field_values ?? '[]'),
      ]).toEqual([3, 3, [fv('firstName', 'R0'), fv('age', 6)]]);
      expect([(await stored(ids[1] as number))?.version, await changeCount(ids[1] as number)]).toEqual([2, 2]);
    },
  );

  it(
    "a keyed patch runs in its record's object; after a lost answer and a restart, it answers what it " +
      'committed, not a second write',
    async () => {
      const { editor, workspaceId, object } = await setup(0);
      const record = await createOne(editor.key, object.id, [fv('firstName', 'cold')]);
      const id = record.id as number;
      // A record the Worker does not remember is read by the Worker first; one it remembers, with a
      // key, runs near D1 in the record's object.
      await call('GET', `/records/${id}`, { key: editor.key });
      const lost = loseReplies(nearCall, 1);
      let between: { body: any } | undefined;
      chaos.onLost = async () => {
        await forget(env.RECORDS.get(env.RECORDS.idFromName(String(id))), (instance: any) => {
          instance.answers = new Expiring(60_000, 10, () => Date.now());
          instance.queue = undefined;
        });
        between = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
          key: editor.key,
          body: { fieldValues: [fv('age', 6)] },
        });
      };
      const res = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 5)] },
        headers: { 'Idempotency-Key': 'cold-5' },
      });
      expect(lost.lost).toBe(1);
      expect([res.status, res.body.version, res.body.fieldValues]).toEqual([
        200,
        2,
        [fv('firstName', 'cold'), fv('age', 5)],
      ]);
      expect(between?.body.version).toBe(3);
      expect([
        (await stored(id))?.version,
        await changeCount(id),
        JSON.parse((await stored(id))?.field_values ?? '[]'),
      ]).toEqual([3, 3, [fv('firstName', 'cold'), fv('age', 6)]]);
    },
  );

  it(
    'a keyed patch claims its key and writes near D1: one object call from the Worker, the claim and ' + 'write inside',
    async () => {
      const { editor, workspaceId, ids } = await setup();
      const id = ids[0] as number;
      const fromWorker: string[] = [];
      chaos.decide = (c) => {
        // The webhook wake-up after an answer has left (a look-up of subscriptions) is not the write's.
        if (c.from === 'worker' && !c.sql.some((sql) => sql.includes('FROM webhooks')))
          fromWorker.push(`${c.target}:${c.method}`);
        return undefined;
      };
      const res = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 3)] },
        headers: { 'Idempotency-Key': 'near-one' },
      });
      expect([res.status, res.body.version]).toEqual([200, 2]);
      // Not even the caller is read by the Worker: the coordinator checks it, claims the key, and writes.
      expect(fromWorker).toEqual(['object:run']);
      const again = await call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
        key: editor.key,
        body: { fieldValues: [fv('age', 3)] },
        headers: { 'Idempotency-Key': 'near-one' },
      });
      expect([again.headers.get('Idempotent-Replayed'), again.body]).toEqual(['true', res.body]);
    },
  );
});
