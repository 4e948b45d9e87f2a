import { runInDurableObject } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { roleWorld } from './role-world.ts';
import { feedAfter, latest, open, socket } from './live-clients.ts';
import {
  admin,
  call,
  createOne,
  expectProblem,
  fv,
  liveEvents,
  newUser,
  until,
  world,
  type Answer,
} from './helpers.ts';

/** `writers` clients at once, each creating a record and patching, deleting and restoring it. */
async function writeAtOnce(key: string, workspaceId: number, objectId: number, writers = 6): Promise<void> {
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      const record = await createOne(key, objectId, [fv('firstName', `W${w}`)]);
      const path = `/workspaces/${workspaceId}/records/${record.id}`;
      for (let p = 0; p < 3; p++) await call('PATCH', path, { key, body: { fieldValues: [fv('age', p)] } });
      await call('DELETE', path, { key });
      await call('POST', `${path}/restore`, { key });
    }),
  );
}

describe('a workspace live stream', () => {
  it('sends every change, as the feed shows it, in commit order and once, to each of many sockets', async () => {
    const { editor, viewer, workspaceId, object } = await world();
    const after = await latest(editor.key, workspaceId);
    const sockets = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        socket(workspaceId, { key: i % 2 === 0 ? editor.key : viewer.key, query: `?after=${after}` }),
      ),
    );
    await writeAtOnce(editor.key, workspaceId, object.id);
    const feed = await feedAfter(editor.key, workspaceId, after);
    expect(feed).toHaveLength(6 * 6);
    for (const s of sockets) {
      await until(() => s.items.length >= feed.length, 'every item');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(s.items).toEqual(feed);
    }
    for (const s of sockets) s.socket.close(1000);
  });

  it('starts after the newest change by default, and resumes after a cursor with no gap and no duplicate', async () => {
    const { editor, workspaceId, object } = await world();
    await createOne(editor.key, object.id, [fv('firstName', 'Before')]);
    const first = await socket(workspaceId, { key: editor.key });
    const a = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    await until(() => first.items.length === 1, 'the first item');
    expect(first.items[0]).toMatchObject({ type: 'created', recordId: a.id });
    first.socket.close(1000);
    // Changes made while no socket is open arrive on the next, resumed from the last item's cursor.
    const b = await createOne(editor.key, object.id, [fv('firstName', 'B')]);
    await call('PATCH', `/workspaces/${workspaceId}/records/${a.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('age', 40)] },
    });
    const resumed = await socket(workspaceId, { key: editor.key, query: `?after=${first.items[0].cursor}` });
    await until(() => resumed.items.length === 2, 'the two later items');
    const c = await createOne(editor.key, object.id, [fv('firstName', 'C')]);
    await until(() => resumed.items.length === 3, 'the item after');
    expect(resumed.items.map((item) => [item.type, item.recordId])).toEqual([
      ['created', b.id],
      ['updated', a.id],
      ['created', c.id],
    ]);
    expect(resumed.items[1].fieldValues).toEqual([fv('age', 40)]);
    // `start=oldest` sends every kept change first.
    const all = await socket(workspaceId, { key: editor.key, query: '?start=oldest' });
    await until(() => all.items.length === 5, 'every kept item');
    expect(all.items.map((item) => item.recordId)).toEqual([expect.any(Number), a.id, b.id, a.id, c.id]);
  });

  it('sends the same items as Server-Sent Events, each with its cursor as its id', async () => {
    const { editor, workspaceId, object } = await world();
    const after = await latest(editor.key, workspaceId);
    const stream = await liveEvents(editor.key, workspaceId, `?after=${after}`);
    await writeAtOnce(editor.key, workspaceId, object.id, 3);
    const feed = await feedAfter(editor.key, workspaceId, after);
    await until(() => stream.events.length >= feed.length, 'every event');
    expect(stream.events.map((event) => JSON.parse(event.data))).toEqual(feed);
    expect(stream.events.map((event) => event.id)).toEqual(feed.map((item) => item.cursor));
    await stream.cancel();
  });

  it('opens for a browser with a single-use ticket; refuses one used, expired or of another workspace', async () => {
    const { editor, workspaceId, object } = await world();
    const other = (await admin('POST', '/admin/workspaces', { name: 'other' })).body.id as number;
    await admin('PUT', `/admin/workspaces/${other}/members/${editor.id}`, { role: 'editor' });
    const issued = await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key: editor.key });
    expect(issued.status).toBe(201);
    expect(issued.body.ticket).toMatch(/^lt_[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(issued.body.expiresAt) - Date.now()).toBeGreaterThan(50_000);
    const query = `?ticket=${issued.body.ticket}`;
    const s = await socket(workspaceId, { query });
    const record = await createOne(editor.key, object.id, [fv('firstName', 'T')]);
    await until(() => s.items.length === 1, 'the item');
    expect(s.items[0]).toMatchObject({ type: 'created', recordId: record.id });
    const again = (await open(workspaceId, { query })) as Answer;
    expectProblem(again, 401, 'unauthorized');
    expect(again.body.errors).toEqual([expect.objectContaining({ query: 'ticket', code: 'invalid_ticket' })]);
    const forOther = (await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key: editor.key })).body.ticket;
    expectProblem((await open(other, { query: `?ticket=${forOther}` })) as Answer, 401, 'unauthorized');
    // The ticket refused on the other workspace was not used up there: it still opens its own, once.
    expect('items' in (await open(workspaceId, { query: `?ticket=${forOther}` }))).toBe(true);
    const old = (await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key: editor.key })).body.ticket;
    await runInDurableObject(env.LIVE.getByName(String(workspaceId)), (_, state) => {
      state.storage.sql.exec('UPDATE tickets SET expires_at = ?', Date.now() - 1);
    });
    expectProblem((await open(workspaceId, { query: `?ticket=${old}` })) as Answer, 401, 'unauthorized');
    s.socket.close(1000);
  });

  it('refuses what the feed refuses, before any stream is opened', async () => {
    const { editor, stranger, workspaceId } = await world();
    expectProblem((await open(workspaceId, {})) as Answer, 401, 'unauthorized');
    expectProblem((await open(workspaceId, { key: 'rk_nobody' })) as Answer, 401, 'unauthorized');
    expectProblem((await open(workspaceId, { key: stranger.key })) as Answer, 404, 'not_found');
    const forged = (await open(workspaceId, { key: editor.key, query: '?after=MQ.AAAAAAAAAAAAAAAAAAAAAA' })) as Answer;
    expectProblem(forged, 400, 'invalid_request');
    const both = (await open(workspaceId, { key: editor.key, query: '?start=oldest&after=x&x=1' })) as Answer;
    expect(both.body.errors.map((e: { query: string }) => e.query).sort()).toEqual(['start', 'x']);
    const plain = await call('GET', `/workspaces/${workspaceId}/live`, { key: editor.key });
    expectProblem(plain, 426, 'upgrade_required');
    expect(plain.headers.get('Upgrade')).toBe('websocket');
    expectProblem(
      await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key: stranger.key }),
      404,
      'not_found',
    );
  });

  it('refuses a cursor older than the feed keeps (410), as the feed does', async () => {
    const { editor, workspaceId, object } = await world();
    const old = await latest(editor.key, workspaceId);
    await createOne(editor.key, object.id, [fv('firstName', 'Pruned')]);
    const newest = (await feedAfter(editor.key, workspaceId, old)).at(-1).cursor;
    const seq = Number(atob(newest.split('.')[0]));
    const tenant = Math.floor(workspaceId / 2 ** 36) + 1;
    await env.DB.prepare('INSERT INTO feed_horizons (tenant, seq) VALUES (?1, ?2) ON CONFLICT DO UPDATE SET seq = ?2')
      .bind(tenant, seq)
      .run();
    try {
      expectProblem((await open(workspaceId, { key: editor.key, query: `?after=${old}` })) as Answer, 410, 'gone');
      expectProblem(
        await call('GET', `/workspaces/${workspaceId}/changes?after=${old}`, { key: editor.key }),
        410,
        'gone',
      );
    } finally {
      await env.DB.prepare('UPDATE feed_horizons SET seq = 0 WHERE tenant = ?1').bind(tenant).run();
    }
  });

  it('closes a stream once its key is revoked (4401) or its membership removed (4403)', async () => {
    const { editor, viewer, workspaceId } = await world();
    const keys = (await admin('GET', `/admin/users/${editor.id}/keys`)).body;
    const revoked = await socket(workspaceId, { key: editor.key });
    const removed = await socket(workspaceId, { key: viewer.key });
    const events = await liveEvents(viewer.key, workspaceId);
    await admin('DELETE', `/admin/keys/${keys[0].id}`);
    await admin('DELETE', `/admin/workspaces/${workspaceId}/members/${viewer.id}`);
    expect(await revoked.closed).toMatchObject({ code: 4401 });
    expect(await removed.closed).toMatchObject({ code: 4403 });
    await events.ended;
    expect(events.events.at(-1)).toMatchObject({ event: 'close' });
    expect(JSON.parse(events.events.at(-1)?.data ?? '')).toMatchObject({ code: 4403 });
  });

  it('closes the stream of a deleted user (4401)', async () => {
    const { workspaceId } = await world();
    const leaving = await newUser('leaving');
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${leaving.id}`, { role: 'viewer' });
    const s = await socket(workspaceId, { key: leaving.key });
    await admin('DELETE', `/admin/users/${leaving.id}`);
    expect(await s.closed).toMatchObject({ code: 4401 });
  });

  it('ignores what a client sends (a text ping is answered pong) and keeps streaming', async () => {
    const { editor, workspaceId, object } = await world();
    const s = await socket(workspaceId, { key: editor.key });
    const pongs: string[] = [];
    s.socket.addEventListener('message', (event) => {
      if (event.data === 'pong') pongs.push(event.data);
    });
    s.socket.send('ping');
    s.socket.send(JSON.stringify({ fieldValues: [] }));
    await until(() => pongs.length === 1, 'the pong');
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Still')]);
    await until(() => s.items.length === 1, 'the item after the client spoke');
    expect(s.items[0]).toMatchObject({ type: 'created', recordId: record.id });
  });

  it('shows a member under a role what their feed shows: no hidden field, no record the role hides', async () => {
    const w = await roleWorld();
    const feed = await feedAfter(w.member.key, w.workspaceId);
    const owners = await feedAfter(w.owner.key, w.workspaceId);
    expect(feed.length).toBeLessThan(owners.length);
    const s = await socket(w.workspaceId, { key: w.member.key, query: '?start=oldest' });
    await until(() => s.items.length >= feed.length, "the member's items");
    // A change the member may see, made after the stream opened, arrives too; the owner's own record does not.
    await call('PATCH', `/workspaces/${w.workspaceId}/records/${w.ownersDeal.id}`, {
      key: w.owner.key,
      body: { fieldValues: [fv('note', 'not for the member')] },
    });
    await call('PATCH', `/workspaces/${w.workspaceId}/records/${w.mine.id}`, {
      key: w.member.key,
      body: { fieldValues: [fv('note', 'mine')] },
    });
    await until(() => s.items.length > feed.length, 'the later item');
    const later = await feedAfter(w.member.key, w.workspaceId);
    expect(s.items).toEqual(later);
    expect(JSON.stringify(s.items)).not.toMatch(/"salary"|"link"/);
    expect(s.items.map((item) => item.recordId)).not.toContain(w.ownersDeal.id);
  });

  it('closes an event stream that does not keep up (4008) with the cursor to resume from', async () => {
    const { editor, workspaceId, object } = await world();
    const res = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live`, {
      headers: { Accept: 'text/event-stream', Authorization: `Bearer ${editor.key}` },
    });
    const big = 'x'.repeat(90_000);
    const created: number[] = [];
    for (let i = 0; i < 120; i++) created.push((await createOne(editor.key, object.id, [fv('firstName', big)])).id);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const text = await res.text();
    const events = text
      .split('\n\n')
      // A comment line keeps a quiet stream open; it is no event.
      .filter((event) => event !== '' && !event.startsWith(':'))
      .map((event) => Object.fromEntries(event.split('\n').map((line) => line.split(': ', 2))));
    const last = events.at(-1) as { event: string; data: string };
    expect(last.event).toBe('close');
    const { code, reason } = JSON.parse(last.data);
    expect(code).toBe(4008);
    const sent = events.slice(0, -1);
    expect(sent.length).toBeLessThan(created.length);
    expect(sent.map((event) => JSON.parse(event.data).recordId)).toEqual(created.slice(0, sent.length));
    expect(reason).toBe(sent.at(-1)?.id);
    const rest = await socket(workspaceId, { key: editor.key, query: `?after=${reason}` });
    await until(() => rest.items.length === created.length - sent.length, 'the rest');
    expect(rest.items.map((item) => item.recordId)).toEqual(created.slice(sent.length));
  });

  it('delivers a change whose wake-up was lost, at the next check', async () => {
    const { editor, workspaceId, object } = await world();
    const live = env.LIVE.getByName(String(workspaceId)) as unknown as { deafen(deaf: boolean): Promise<void> };
    const s = await socket(workspaceId, { key: editor.key });
    await live.deafen(true);
    try {
      const record = await createOne(editor.key, object.id, [fv('firstName', 'Unannounced')]);
      await until(() => s.items.length === 1, 'the item, found without a wake-up');
      expect(s.items[0]).toMatchObject({ type: 'created', recordId: record.id });
    } finally {
      await live.deafen(false);
    }
  });

  it('ignores megabytes a client sends and streams on, to it and to the others', async () => {
    const { editor, workspaceId, object } = await world();
    const loud = await socket(workspaceId, { key: editor.key });
    const quiet = await socket(workspaceId, { key: editor.key });
    for (let i = 0; i < 3; i++) loud.socket.send('x'.repeat(4 * 1024 * 1024));
    const first = await createOne(editor.key, object.id, [fv('firstName', 'After')]);
    for (const s of [loud, quiet]) {
      await until(() => s.items.length === 1, 'the item after 4 MiB');
      expect(s.items[0]).toMatchObject({ recordId: first.id });
    }
  });

  it('streams a workspace of a tenant on a database of its own, to its key or its ticket', async () => {
    const tenant = (await admin('POST', '/tenants', { name: 'Live', database: 'DB_2' })).body;
    const as = (method: string, path: string, body?: unknown) =>
      call(method, path, { key: tenant.adminKey, ...(body === undefined ? {} : { body }) });
    const user = (await as('POST', '/admin/users', { name: 'editor' })).body;
    const key = (await as('POST', `/admin/users/${user.id}/keys`)).body.key as string;
    const workspaceId = (await as('POST', '/admin/workspaces', { name: 'ws' })).body.id as number;
    await as('PUT', `/admin/workspaces/${workspaceId}/members/${user.id}`, { role: 'editor' });
    const object = await as('POST', '/admin/objects', {
      name: 'Thing',
      workspaceIds: [workspaceId],
      fields: [{ name: 'label', type: 'text' }],
    });
    const byKey = await socket(workspaceId, { key });
    const ticket = (await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key })).body.ticket;
    const byTicket = await socket(workspaceId, { query: `?ticket=${ticket}` });
    const record = await createOne(key, object.body.id, [fv('label', 'x')]);
    for (const s of [byKey, byTicket]) {
      await until(() => s.items.length === 1, 'the item');
      expect(s.items[0]).toMatchObject({ type: 'created', recordId: record.id });
    }
  });
});
