import { env } from 'cloudflare:workers';
import { Webhook as Verifier } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { accepted, type Received } from '../webhook-log.ts';
import { admin, byName, call, createOne, expectProblem, foldFeed, newObject, world, runScheduled } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const RECEIVER = env.WEBHOOK_RECEIVER;
let names = 0;
const hookName = (): string => `it-${Date.now()}-${names++}`;

async function receiverLog(name: string): Promise<Received[]> {
  return (await (await fetch(`${RECEIVER}/log/${name}`)).json()) as Received[];
}

async function control(name: string, behaviour: Record<string, unknown>): Promise<void> {
  await fetch(`${RECEIVER}/control/${name}`, { method: 'POST', body: JSON.stringify(behaviour) });
}

/** Polls until `done` holds for the receiver's log (or fails after `ms`). */
async function until(name: string, done: (log: Received[]) => boolean, ms = 20_000): Promise<Received[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const log = await receiverLog(name);
    if (done(log)) return log;
    if (Date.now() > deadline)
      throw new Error(`receiver ${name} got ${log.length} deliveries: ${JSON.stringify(log.map((e) => e.id))}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function subscribe(key: string, workspaceId: number, name: string, extra: Record<string, unknown> = {}) {
  const answer = await call('POST', `/workspaces/${workspaceId}/webhooks`, {
    key,
    body: { url: `${RECEIVER}/hook/${name}`, ...extra },
  });
  if (answer.status !== 201) throw new Error(`subscribe: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as { id: number; secret: string; status: string };
}

/** Every item of the workspace's feed (from its start). */
async function feed(key: string, workspaceId: number): Promise<any[]> {
  const items: any[] = [];
  let after: string | undefined;
  for (;;) {
    const q = after === undefined ? '' : `&after=${encodeURIComponent(after)}`;
    const page = await call('GET', `/workspaces/${workspaceId}/changes?limit=1000${q}`, { key });
    items.push(...page.body.items);
    if (page.body.items.length === 0) return items;
    after = page.body.nextCursor;
  }
}

/** `writers` concurrent clients, each creating a record then patching, deleting and restoring it. */
async function writeConcurrently(key: string, workspaceId: number, objectId: number, writers = 8, patches = 4) {
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      const record = await createOne(key, objectId, [fv('firstName', `W${w}`)]);
      const path = `/workspaces/${workspaceId}/records/${record.id}`;
      for (let p = 0; p < patches; p++) {
        const answer = await call('PATCH', path, {
          key,
          body: { fieldValues: [fv('age', p), fv('lastName', `L${p}`)] },
        });
        expect(answer.status).toBe(200);
      }
      expect((await call('DELETE', path, { key })).status).toBe(200);
      expect((await call('POST', `${path}/restore`, { key })).status).toBe(200);
    }),
  );
}

describe('webhook targets', () => {
  it('delivers only while its maker edits the workspace: under a role, nothing is sent; back, all is', async () => {
    const { editor, viewer, workspaceId, object } = await world();
    const name = hookName();
    await subscribe(editor.key, workspaceId, name);
    const first = await createOne(editor.key, object.id, [fv('firstName', 'Before')]);
    await until(name, (log) => accepted(log).length === 1);
    // The maker now holds a role that hides a field; another editor writes a value of it.
    const role = await admin('POST', '/admin/roles', {
      name: `hidden ${hookName()}`,
      objects: [{ objectId: object.id, read: true, fields: { age: 'hidden' } }],
    });
    const held = await admin('PUT', `/admin/workspaces/${workspaceId}/members/${editor.id}`, { roleId: role.body.id });
    expect(held.body).toEqual({ workspaceId, userId: editor.id, roleId: role.body.id });
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${viewer.id}`, { role: 'editor' });
    const during = await createOne(viewer.key, object.id, [fv('firstName', 'During'), fv('age', 41)]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(accepted(await receiverLog(name)).length).toBe(1);
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${editor.id}`, { role: 'editor' });
    const after = await createOne(viewer.key, object.id, [fv('firstName', 'After')]);
    const log = await until(name, (entries) => accepted(entries).length === 3);
    expect(accepted(log).map((entry) => JSON.parse(entry.body).recordId)).toEqual([first.id, during.id, after.id]);
  });

  it('a URL of a host that is not public, in any spelling, is 422 at /url, and nothing is subscribed', async () => {
    const { editor, workspaceId } = await world();
    const spellings = [
      'https://127.1/',
      'https://2130706433/',
      'https://0x7f000001/',
      'https://localhost/',
      'https://169.254.169.254/',
      'https://[::ffff:127.0.0.1]/',
      'https://[fd00::1]/',
      'https://printer.local/',
      'https://db.internal/',
      'http://hooks.example.com/',
    ];
    for (const url of spellings) {
      const answer = await call('POST', `/workspaces/${workspaceId}/webhooks`, { key: editor.key, body: { url } });
      expectProblem(answer, 422, 'unprocessable');
      expect([url, answer.body.errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code])]).toEqual([
        url,
        [['/url', 'url_not_allowed']],
      ]);
    }
    const listed = await call('GET', `/workspaces/${workspaceId}/webhooks`, { key: editor.key });
    expect(listed.body.items).toEqual([]);
  });
});

describe('webhook subscriptions', () => {
  it(
    'an editor subscribes (secret once), lists, pauses, deletes; others are refused and nothing is ' + 'stored',
    async () => {
      const { editor, viewer, stranger, workspaceId } = await world();
      const name = hookName();
      const created = await call('POST', `/workspaces/${workspaceId}/webhooks`, {
        key: editor.key,
        body: { url: `${RECEIVER}/hook/${name}`, types: ['created', 'updated', 'created'], objectIds: [7, 3] },
      });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.any(Number),
        url: `${RECEIVER}/hook/${name}`,
        types: ['created', 'updated'],
        objectIds: [3, 7],
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
        createdAt: expect.any(Number),
        status: 'active',
        reason: null,
      });
      const { secret, ...shown } = created.body;
      const base = `/workspaces/${workspaceId}/webhooks`;
      const listed = await call('GET', base, { key: editor.key });
      expect(listed.body).toEqual({ items: [shown] });
      expect(JSON.stringify(listed.body)).not.toContain(secret);

      expectProblem(await call('GET', base, { key: viewer.key }), 403, 'forbidden');
      expectProblem(
        await call('POST', base, { key: viewer.key, body: { url: 'https://a.example' } }),
        403,
        'forbidden',
      );
      expectProblem(await call('GET', base, { key: stranger.key }), 404, 'not_found');
      expectProblem(await call('GET', base), 401, 'unauthorized');
      expectProblem(await call('GET', `/workspaces/x/webhooks`, { key: editor.key }), 400, 'invalid_request');

      const bad = async (body: unknown, status: number, code: string, pointer: string) => {
        const answer = await call('POST', base, { key: editor.key, body });
        expectProblem(answer, status, code);
        expect(answer.body.errors.map((e: any) => e.pointer)).toContain(pointer);
      };
      await bad({ url: 'http://hooks.example.com/x' }, 422, 'unprocessable', '/url');
      await bad({ url: 'not a url' }, 422, 'unprocessable', '/url');
      await bad({ url: 'https://user:pw@hooks.example.com/' }, 422, 'unprocessable', '/url');
      await bad({ url: 'https://a.example', types: [] }, 400, 'invalid_request', '/types');
      await bad({ url: 'https://a.example', types: ['moved'] }, 400, 'invalid_request', '/types/0');
      await bad({ url: 'https://a.example', objectIds: [1.5] }, 400, 'invalid_request', '/objectIds/0');
      await bad({ url: 'https://a.example', secret: 'mine' }, 400, 'invalid_request', '/secret');
      expectProblem(
        await call('POST', base, { key: editor.key, raw: 'x', headers: { 'Content-Type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      );
      expect((await call('GET', base, { key: editor.key })).body.items).toHaveLength(1);

      const one = `${base}/${created.body.id}`;
      const paused = await call('PATCH', one, { key: editor.key, body: { status: 'disabled' } });
      expect(paused.body).toEqual({ ...shown, status: 'disabled', reason: 'paused by an editor' });
      expect((await call('GET', base, { key: editor.key })).body.items[0].status).toBe('disabled');
      expectProblem(await call('PATCH', one, { key: editor.key, body: { status: 'gone' } }), 400, 'invalid_request');
      expectProblem(
        await call('PATCH', `${base}/999999`, { key: editor.key, body: { status: 'active' } }),
        404,
        'not_found',
      );
      expectProblem(await call('GET', `${base}/999999/deliveries`, { key: editor.key }), 404, 'not_found');
      expect((await call('DELETE', one, { key: editor.key })).status).toBe(204);
      expect((await call('GET', base, { key: editor.key })).body).toEqual({ items: [] });
      expectProblem(await call('DELETE', one, { key: editor.key }), 404, 'not_found');
    },
  );

  it(
    'every change of 8 concurrent writers arrives signed, in feed order after dedupe, and folds into ' + 'every record',
    async () => {
      const { editor, workspaceId, object } = await world();
      const before = await createOne(editor.key, object.id, [fv('firstName', 'Before')]);
      const name = hookName();
      const { secret } = await subscribe(editor.key, workspaceId, name);
      await writeConcurrently(editor.key, workspaceId, object.id);
      const expected = (await feed(editor.key, workspaceId)).filter((item) => item.recordId !== before.id);
      expect(expected).toHaveLength(8 * 7);
      const log = await until(name, (l) => accepted(l).length >= expected.length);
      const got = accepted(log);
      expect(got.map((e) => e.id)).toEqual(expected.map((item) => item.cursor));
      const verifier = new Verifier(secret);
      const items = got.map((entry) =>
        verifier.verify(entry.body, {
          'webhook-id': entry.id,
          'webhook-timestamp': entry.timestamp,
          'webhook-signature': entry.signature,
        }),
      );
      expect(items).toEqual(expected);
      // A tampered body does not verify.
      const first = got[0] as Received;
      expect(() =>
        verifier.verify(first.body.replace('"version":1', '"version":2'), {
          'webhook-id': first.id,
          'webhook-timestamp': first.timestamp,
          'webhook-signature': first.signature,
        }),
      ).toThrow();
      const states = foldFeed(items);
      const last = new Map(states.map((state) => [state.id, state]));
      expect(last.size).toBe(8);
      for (const [id, state] of last) {
        const current = await call('GET', `/records/${id}`, { key: editor.key });
        expect(state).toEqual(byName(current.body));
      }
    },
  );

  it(
    'a receiver that answers 500 for a while gets every item, in order, once it recovers; the log shows' +
      ' the failures',
    async () => {
      const { editor, workspaceId, object } = await world();
      const name = hookName();
      await control(name, { failUntil: Date.now() + 1_500 });
      const { id } = await subscribe(editor.key, workspaceId, name);
      await writeConcurrently(editor.key, workspaceId, object.id, 3, 2);
      const expected = await feed(editor.key, workspaceId);
      const log = await until(name, (l) => accepted(l).length >= expected.length);
      expect(accepted(log).map((e) => e.id)).toEqual(expected.map((item) => item.cursor));
      // While failing, the same first item was retried, never a later one (one in flight, in order).
      const failed = log.filter((e) => e.status === 500);
      expect(failed.length).toBeGreaterThan(1);
      expect(new Set(failed.map((e) => e.id))).toEqual(new Set([expected[0].cursor]));
      const deliveries = await call('GET', `/workspaces/${workspaceId}/webhooks/${id}/deliveries`, { key: editor.key });
      const attempts = deliveries.body.items;
      expect(attempts[0]).toEqual({
        cursor: expected.at(-1).cursor,
        at: expect.any(Number),
        status: 204,
        durationMs: expect.any(Number),
        error: null,
      });
      expect(attempts.at(-1)).toMatchObject({
        cursor: expected[0].cursor,
        status: 500,
        error: 'HTTP 500: receiver down',
      });
    },
  );

  it('a receiver that never recovers gets the subscription disabled; re-enabled, it loses nothing', async () => {
    const { editor, workspaceId, object } = await world();
    const name = hookName();
    await control(name, { failAlways: true });
    const { id } = await subscribe(editor.key, workspaceId, name);
    await writeConcurrently(editor.key, workspaceId, object.id, 2, 1);
    const base = `/workspaces/${workspaceId}/webhooks`;
    const deadline = Date.now() + 20_000;
    let listed: any;
    do {
      await new Promise((resolve) => setTimeout(resolve, 100));
      listed = (await call('GET', base, { key: editor.key })).body.items[0];
    } while (listed.status !== 'disabled' && Date.now() < deadline);
    expect(listed.status).toBe('disabled');
    expect(listed.reason).toMatch(/^failing since .*: HTTP 500: receiver down$/);
    // Disabled: no more attempts.
    const attemptsWhenDisabled = (await receiverLog(name)).length;
    await createOne(editor.key, object.id, [fv('firstName', 'While disabled')]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await receiverLog(name)).length).toBe(attemptsWhenDisabled);

    await control(name, {});
    const resumed = await call('PATCH', `${base}/${id}`, { key: editor.key, body: { status: 'active' } });
    expect(resumed.body).toMatchObject({ status: 'active', reason: null });
    const expected = await feed(editor.key, workspaceId);
    const log = await until(name, (l) => accepted(l).length >= expected.length);
    expect(accepted(log).map((e) => e.id)).toEqual(expected.map((item) => item.cursor));
  });

  it('restarting the delivery object mid-stream loses nothing', async () => {
    const { editor, workspaceId, object } = await world();
    const name = hookName();
    await control(name, { delayMs: 30 });
    const { id } = await subscribe(editor.key, workspaceId, name);
    await writeConcurrently(editor.key, workspaceId, object.id, 8, 3);
    const expected = await feed(editor.key, workspaceId);
    const stub = env.WEBHOOKS.getByName(String(id)) as unknown as { restart(): Promise<void> };
    for (let round = 0; round < 3; round++) {
      const seen = accepted(await until(name, (l) => accepted(l).length >= (round + 1) * 8)).length;
      expect(seen).toBeLessThan(expected.length); // mid-stream, not after it
      await stub.restart().catch(() => {});
    }
    const log = await until(name, (l) => accepted(l).length >= expected.length);
    expect(accepted(log).map((e) => e.id)).toEqual(expected.map((item) => item.cursor));
  });

  it('a paused subscription sends nothing; resumed, it sends what it missed, in order', async () => {
    const { editor, workspaceId, object } = await world();
    const name = hookName();
    const { id } = await subscribe(editor.key, workspaceId, name);
    const one = `/workspaces/${workspaceId}/webhooks/${id}`;
    await createOne(editor.key, object.id, [fv('firstName', 'Before')]);
    await until(name, (l) => l.length === 1);
    expect((await call('PATCH', one, { key: editor.key, body: { status: 'disabled' } })).status).toBe(200);
    await writeConcurrently(editor.key, workspaceId, object.id, 2, 1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await receiverLog(name)).toHaveLength(1);
    expect((await call('PATCH', one, { key: editor.key, body: { status: 'active' } })).body.status).toBe('active');
    const expected = await feed(editor.key, workspaceId);
    const log = await until(name, (l) => accepted(l).length >= expected.length);
    expect(accepted(log).map((e) => e.id)).toEqual(expected.map((item) => item.cursor));
  });

  it('a filtered subscription gets exactly the matching items', async () => {
    const { editor, workspaceId, object } = await world();
    const other = await newObject([workspaceId], { name: 'Other' });
    const name = hookName();
    await subscribe(editor.key, workspaceId, name, { types: ['created', 'deleted'], objectIds: [other.id] });
    await writeConcurrently(editor.key, workspaceId, object.id, 2, 1);
    await writeConcurrently(editor.key, workspaceId, other.id, 2, 1);
    const otherIds = new Set(
      (await feed(editor.key, workspaceId)).filter((i) => i.record?.objectId === other.id).map((i) => i.recordId),
    );
    const expected = (await feed(editor.key, workspaceId)).filter(
      (item) => otherIds.has(item.recordId) && ['created', 'deleted'].includes(item.type),
    );
    expect(expected).toHaveLength(4);
    // A marker change after the others: once it is in, everything before it was decided.
    const marker = await createOne(editor.key, other.id, [fv('firstName', 'marker')]);
    const log = await until(name, (l) => l.some((e) => JSON.parse(e.body).recordId === marker.id));
    expect(
      accepted(log)
        .map((e) => JSON.parse(e.body))
        .slice(0, -1),
    ).toEqual(expected);
  });

  it('replay sends again everything after a cursor; a forged or foreign cursor is 400', async () => {
    const { editor, workspaceId, object } = await world();
    const name = hookName();
    const { id } = await subscribe(editor.key, workspaceId, name);
    await writeConcurrently(editor.key, workspaceId, object.id, 2, 1);
    const expected = await feed(editor.key, workspaceId);
    await until(name, (l) => l.length >= expected.length);
    const path = `/workspaces/${workspaceId}/webhooks/${id}/replay`;
    const replayed = await call('POST', path, { key: editor.key, body: { after: expected[2].cursor } });
    expect(replayed.status).toBe(200);
    const log = await until(name, (l) => l.length >= expected.length * 2 - 3);
    expect(log.map((e) => e.id)).toEqual([...expected, ...expected.slice(3)].map((item) => item.cursor));
    const forged = await call('POST', path, { key: editor.key, body: { after: `${expected[2].cursor}x` } });
    expectProblem(forged, 400, 'invalid_request');
    expect(forged.body.errors[0].pointer).toBe('/after');
    const { workspaceId: otherWs } = await world();
    const foreign = await call('POST', `/workspaces/${otherWs}/webhooks/${id}/replay`, {
      key: editor.key,
      body: { after: expected[2].cursor },
    });
    expectProblem(foreign, 404, 'not_found');
  });

  it('a patch, a delete and a restore of one record each wake the subscription at once, not at its alarm', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Solo')]);
    const name = hookName();
    await subscribe(editor.key, workspaceId, name);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const writes = [
      () => call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', 1)] } }),
      () => call('DELETE', path, { key: editor.key }),
      () => call('POST', `${path}/restore`, { key: editor.key }),
    ];
    for (const [i, write] of writes.entries()) {
      // Each answer carries one record; its wake-up alone delivers it, well within the alarm's 30 s.
      expect((await write()).status).toBe(200);
      const log = await until(name, (l) => accepted(l).length >= i + 1, 5_000);
      expect(accepted(log).map((e) => JSON.parse(e.body).version)).toEqual([2, 3, 4].slice(0, i + 1));
    }
  });

  it('a subscription that no wake-up ever reached is started by the Cron Trigger and misses nothing', async () => {
    const { editor, workspaceId, object } = await world();
    await writeConcurrently(editor.key, workspaceId, object.id, 2, 1);
    const name = hookName();
    // Made behind the API's back: no object was ever told about it, and the writes came before it.
    // Its id is taken as the service takes one, so that later subscriptions do not meet it.
    await env.DB.batch([
      env.DB.prepare("UPDATE sequences SET last = last + 1 WHERE name = 'webhooks' AND tenant = 1"),
      env.DB.prepare(
        `INSERT INTO webhooks (id, workspace_id, url, types, object_ids, secret, status, start_seq, created_at,
           created_by)
         SELECT last, ?, ?, 'null', 'null', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'active', 0, 0, ?
         FROM sequences WHERE name = 'webhooks' AND tenant = 1`,
      ).bind(workspaceId, `${RECEIVER}/hook/${name}`, editor.id),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await receiverLog(name)).toEqual([]);
    await runScheduled();
    const expected = await feed(editor.key, workspaceId);
    const log = await until(name, (l) => accepted(l).length >= expected.length);
    expect(accepted(log).map((e) => e.id)).toEqual(expected.map((item) => item.cursor));
  });
});

describe('webhooks see imported records', () => {
  it('each record an import creates is delivered as a created item', async () => {
    const { editor, workspaceId, object } = await world();
    const name = hookName();
    await subscribe(editor.key, workspaceId, name, { types: ['created'] });
    const rows = ['Imp1', 'Imp2', 'Imp3'].map((first) => JSON.stringify({ fieldValues: [fv('firstName', first)] }));
    const answer = await call('POST', `/workspaces/${workspaceId}/imports?objectId=${object.id}`, {
      key: editor.key,
      raw: rows.join('\n'),
      headers: { 'Content-Type': 'application/x-ndjson' },
    });
    expect(answer.status).toBe(202);
    const log = await until(name, (entries) => accepted(entries).length >= 3);
    const items = accepted(log).map((entry) => JSON.parse(entry.body));
    expect(items.map((item) => [item.type, item.record.name, item.record.creationType])).toEqual([
      ['created', 'Imp1', 'System'],
      ['created', 'Imp2', 'System'],
      ['created', 'Imp3', 'System'],
    ]);
  });
});
