import { evictDurableObject, listDurableObjectIds, runInDurableObject } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index.ts';
import {
  ADMIN_TOKEN,
  admin,
  call,
  createOne,
  fv,
  liveEvents,
  newUser,
  newWorkspace,
  newObject,
  until,
  world,
} from './helpers.ts';
import { mover, movingTenant, stepMove } from './moving.ts';
import { feedAfter, latest, socket, type Socket } from './live-clients.ts';

/**
 * The live stream attacked: role changes while streams are open, many keys of mixed grants on one
 * workspace, tickets forged, flooded, spent on refused requests or used across tenants, streams
 * left behind, objects evicted, page cuts, odd requests, workspaces and tenants deleted or moved.
 */

/** Runs `run` inside an object, typed loosely: the objects' own types are too deep for the checker here. */
const inObject = runInDurableObject as unknown as <R>(
  stub: unknown,
  run: (instance: any, state: DurableObjectState) => R | Promise<R>,
) => Promise<R>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('live streams under attack: access', () => {
  it('a viewer moved to a role that hides a field never gets that field on an open socket', async () => {
    const { editor, viewer, workspaceId, object } = await world();
    const role = await admin('POST', '/admin/roles', {
      name: `no-age ${Math.random()}`,
      objects: [{ objectId: object.id, read: true, fields: { age: 'hidden' } }],
    });
    expect(role.status).toBe(201);
    const s = await socket(workspaceId, { key: viewer.key });
    const leaks: any[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      await admin('PUT', `/admin/workspaces/${workspaceId}/members/${viewer.id}`, { role: 'viewer' });
      // The object has checked the viewer as a built-in viewer again, and delivered to it.
      await sleep(1_500);
      const warm = await createOne(editor.key, object.id, [fv('firstName', `warm ${attempt}`)]);
      await until(() => s.items.some((item) => item.recordId === warm.id), 'the warm-up item');
      // Now the membership changes to a role hiding `age`, and a record with an age is written at once.
      const put = await admin('PUT', `/admin/workspaces/${workspaceId}/members/${viewer.id}`, {
        roleId: role.body.id,
      });
      expect(put.status).toBe(200);
      const secret = await createOne(editor.key, object.id, [fv('firstName', `after ${attempt}`), fv('age', 99)]);
      await until(() => s.items.some((item) => item.recordId === secret.id), 'the item after the role change');
      const item = s.items.find((i) => i.recordId === secret.id);
      const fromFeed = (await feedAfter(viewer.key, workspaceId)).find((i) => i.recordId === secret.id);
      expect(JSON.stringify(fromFeed)).not.toContain('"age"');
      if (JSON.stringify(item).includes('"age"')) leaks.push(item.record.fieldValues);
    }
    // The feed never shows `age` to the viewer after the change; neither may the stream.
    expect(leaks).toEqual([]);
    s.socket.close(1000);
  });

  it('an editor loses items when another key in the built-in group becomes `rows: own`', async () => {
    const gaps: number[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const owner = await newUser('owner');
      const member = await newUser('member');
      const workspaceId = await newWorkspace({ [owner.id]: 'editor', [member.id]: 'editor' });
      const object = await newObject([workspaceId]);
      const role = await admin('POST', '/admin/roles', {
        name: `own ${Math.random()}`,
        objects: [{ objectId: object.id, read: true, create: true, update: true, rows: 'own' }],
      });
      // The member's stream opens first: it leads the group of built-in members.
      const m = await socket(workspaceId, { key: member.key });
      const o = await socket(workspaceId, { key: owner.key });
      const start = await latest(owner.key, workspaceId);
      const warm = await createOne(owner.key, object.id, [fv('firstName', 'warm')]);
      await until(() => o.items.length === 1 && m.items.length === 1, 'the warm-up item on both');
      await admin('PUT', `/admin/workspaces/${workspaceId}/members/${member.id}`, { roleId: role.body.id });
      const ownersRecord = await createOne(owner.key, object.id, [fv('firstName', 'owner writes')]);
      const membersRecord = await createOne(member.key, object.id, [fv('firstName', 'member writes')]);
      await until(
        () => o.items.some((i) => i.recordId === membersRecord.id),
        "the member's record on the owner's socket",
      );
      await sleep(300);
      const feed = await feedAfter(owner.key, workspaceId, start);
      expect(feed.map((i) => i.recordId)).toEqual([warm.id, ownersRecord.id, membersRecord.id]);
      if (!o.items.some((i) => i.recordId === ownersRecord.id)) gaps.push(attempt);
      m.socket.close(1000);
      o.socket.close(1000);
    }
    // The owner (an editor all along) must get every change of the feed.
    expect(gaps).toEqual([]);
  });

  it('a role edited to hide a field hides it at once on its open sockets', async () => {
    const { editor, viewer, workspaceId, object } = await world();
    const name = `edit ${Math.random()}`;
    const rules = (hidden: boolean) => ({
      name,
      objects: [{ objectId: object.id, read: true, fields: hidden ? { age: 'hidden' } : {} }],
    });
    const role = await admin('POST', '/admin/roles', rules(false));
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${viewer.id}`, { roleId: role.body.id });
    const s = await socket(workspaceId, { key: viewer.key });
    const warm = await createOne(editor.key, object.id, [fv('firstName', 'warm'), fv('age', 1)]);
    await until(() => s.items.some((i) => i.recordId === warm.id), 'warm-up');
    expect(JSON.stringify(s.items[0])).toContain('"age"');
    const put = await admin('PUT', `/admin/roles/${role.body.id}`, rules(true));
    expect(put.status).toBe(200);
    const after = await createOne(editor.key, object.id, [fv('firstName', 'after'), fv('age', 2)]);
    await until(() => s.items.some((i) => i.recordId === after.id), 'the item after the edit');
    const fromFeed = (await feedAfter(viewer.key, workspaceId)).find((i) => i.recordId === after.id);
    expect(JSON.stringify(fromFeed)).not.toContain('"age"');
    expect(s.items.find((i) => i.recordId === after.id)).toEqual(fromFeed);
  });

  it('editor, viewer and a `rows: own` role member on one workspace each see exactly their feed', async () => {
    const { roleWorld } = await import('./role-world.ts');
    const w = await roleWorld();
    const viewer = await newUser('viewer');
    await admin('PUT', `/admin/workspaces/${w.workspaceId}/members/${viewer.id}`, { role: 'viewer' });
    await sleep(1_200);
    const keys = [w.member.key, w.owner.key, viewer.key, w.member.key];
    const starts = await Promise.all(keys.map((k) => latest(k, w.workspaceId)));
    const sockets: Socket[] = [];
    for (const [i, k] of keys.entries())
      sockets.push(await socket(w.workspaceId, { key: k, query: `?after=${starts[i]}` }));
    for (let i = 0; i < 3; i++) {
      await call('PATCH', `/workspaces/${w.workspaceId}/records/${w.ownersDeal.id}`, {
        key: w.owner.key,
        body: { fieldValues: [fv('note', `owner ${i}`), fv('salary', 100 + i)] },
      });
      await call('PATCH', `/workspaces/${w.workspaceId}/records/${w.mine.id}`, {
        key: w.member.key,
        body: { fieldValues: [fv('note', `member ${i}`)] },
      });
      await call('PATCH', `/workspaces/${w.workspaceId}/records/${w.mine.id}`, {
        key: w.owner.key,
        body: { fieldValues: [fv('salary', 10 + i)] },
      });
    }
    for (const [i, k] of keys.entries()) {
      const feed = await feedAfter(k, w.workspaceId, starts[i]);
      await until(() => sockets[i]!.items.length >= feed.length, `socket ${i}`);
      await sleep(200);
      expect(sockets[i]!.items).toEqual(feed);
    }
  });

  it('a member removed gets no item committed after the removal', async () => {
    const { editor, viewer, workspaceId, object } = await world();
    const s = await socket(workspaceId, { key: viewer.key });
    const warm = await createOne(editor.key, object.id, [fv('firstName', 'warm')]);
    await until(() => s.items.some((i) => i.recordId === warm.id), 'warm-up');
    await admin('DELETE', `/admin/workspaces/${workspaceId}/members/${viewer.id}`);
    const after = await createOne(editor.key, object.id, [fv('firstName', 'after removal'), fv('age', 7)]);
    const closed = await s.closed;
    expect(closed.code).toBe(4403);
    expect(s.items.map((i) => i.recordId)).not.toContain(after.id);
  });

  it('a ticket of one tenant on a route of another key opens only what its key may', async () => {
    const { editor, workspaceId } = await world();
    const tenant = (await admin('POST', '/tenants', { name: 'Other', database: 'DB_2' })).body;
    const ticket = (await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key: editor.key })).body.ticket;
    // Another tenant's admin key with this tenant's ticket: the key wins, and it is no member: 404, ticket kept.
    const res = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live?ticket=${ticket}`, {
      headers: { Upgrade: 'websocket', Authorization: `Bearer ${tenant.adminKey}` },
    });
    expect(res.webSocket).toBeNull();
    expect([401, 404]).toContain(res.status);
    // A ticket asked for by a key of the other tenant for this tenant's workspace: refused.
    const foreign = await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key: tenant.adminKey });
    expect([401, 404]).toContain(foreign.status);
  });
});

describe('live streams under attack: the rate limit skip for tickets', () => {
  it('requests with a made-up ticket and no key are neither limited nor free of storage', async () => {
    const tight = { ...env, RATE_LIMITER: env.TEST_TIGHT_LIMITER };
    const ctx = { waitUntil: () => undefined, passThroughOnException: () => undefined, props: {} } as any;
    const before = (await listDurableObjectIds(env.LIVE)).length;
    const statuses: number[] = [];
    // Workspaces that do not exist, of tenants that do not exist: nothing should be created for them.
    for (let i = 0; i < 8; i++) {
      const id = 900_000_000_000 + i * 7_000_000_000_000;
      const res = await worker.fetch(
        new Request(`http://records.test/workspaces/${id}/live?ticket=lt_guess${i}`, {
          headers: { Upgrade: 'websocket' },
        }),
        tight,
        ctx,
      );
      statuses.push(res.status);
    }
    expect(statuses.every((s) => s === 401)).toBe(true);
    const after = (await listDurableObjectIds(env.LIVE)).length;
    // Each unauthenticated guess made a Durable Object with storage of its own for a workspace that does not exist.
    expect(after - before).toBe(0);
  });
});

describe('live streams under attack: leaks', () => {
  it('the orphan is let go at the next write (control)', async () => {
    const { editor, workspaceId, object } = await world();
    const stream = await liveEvents(editor.key, workspaceId);
    await sleep(300);
    await stream.cancel();
    await createOne(editor.key, object.id, [fv('firstName', 'x')]);
    await sleep(2_500);
    const held = await inObject(env.LIVE.getByName(String(workspaceId)), (instance) => instance.held.size as number);
    expect(held).toBe(0);
  });

  it('an event stream whose client went away is let go (no object held awake polling D1)', async () => {
    const { editor, workspaceId } = await world();
    const stream = await liveEvents(editor.key, workspaceId);
    await sleep(300);
    await stream.cancel();
    // No write follows: a quiet workspace.
    await sleep(3_000);
    const held = await inObject(env.LIVE.getByName(String(workspaceId)), async (instance: any, state) => ({
      held: instance.held.size as number,
      alarm: await state.storage.getAlarm(),
    }));
    expect(held).toEqual({ held: 0, alarm: null });
  });

  it('a ticket sent on a request refused for another reason (426, bad cursor) is still good', async () => {
    const { editor, workspaceId } = await world();
    const ticket = (await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key: editor.key })).body.ticket;
    const plain = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live?ticket=${ticket}`);
    expect(plain.status).toBe(426);
    await plain.body?.cancel();
    const res = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live?ticket=${ticket}`, {
      headers: { Upgrade: 'websocket' },
    });
    expect(res.status).toBe(101);
  });

  it('tickets never redeemed are removed after they expire', async () => {
    const { editor, workspaceId } = await world();
    for (let i = 0; i < 3; i++) await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key: editor.key });
    const stub = env.LIVE.getByName(String(workspaceId));
    await inObject(stub, async (_, state) => {
      state.storage.sql.exec('UPDATE tickets SET expires_at = ?', Date.now() - 1);
      await state.storage.setAlarm(Date.now());
    });
    await sleep(1_000);
    const left = await inObject(
      stub,
      (_, state) => state.storage.sql.exec<{ n: number }>('SELECT count(*) AS n FROM tickets').one().n,
    );
    expect(left).toBe(0);
  });
});

describe('live streams under attack: once and in order', () => {
  it('a socket kept through the object being evicted (hibernated) gets no item twice', async () => {
    const { editor, workspaceId, object } = await world();
    const s = await socket(workspaceId, { key: editor.key });
    const stub = env.LIVE.getByName(String(workspaceId));
    // Let the first alarm save the position, then deliver more, then the object is evicted before the next save.
    await sleep(1_200);
    const a = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    await until(() => s.items.length === 1, 'A');
    await evictDurableObject(stub);
    const b = await createOne(editor.key, object.id, [fv('firstName', 'B')]);
    await until(() => s.items.some((i) => i.recordId === b.id), 'B');
    await sleep(1_500);
    expect(s.items.map((i) => i.recordId)).toEqual([a.id, b.id]);
  });

  it('an event stream reconnecting with Last-Event-ID (as EventSource does) resumes with no gap', async () => {
    const { editor, workspaceId, object } = await world();
    const first = await liveEvents(editor.key, workspaceId);
    const a = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    await until(() => first.events.length === 1, 'A');
    await first.cancel();
    const b = await createOne(editor.key, object.id, [fv('firstName', 'B')]);
    const res = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live`, {
      headers: {
        Accept: 'text/event-stream',
        Authorization: `Bearer ${editor.key}`,
        'Last-Event-ID': first.events[0]!.id as string,
      },
    });
    expect(res.status).toBe(200);
    const c = await createOne(editor.key, object.id, [fv('firstName', 'C')]);
    await sleep(800);
    const reader = res.body!.getReader();
    let text = '';
    const deadline = Date.now() + 1_000;
    while (Date.now() < deadline && !text.includes(`"recordId":${c.id}`)) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    expect(a.id).toBeLessThan(b.id);
    // EventSource sends the last id back on its own: B, committed while it was away, must come.
    expect(text).toContain(`"recordId":${b.id}`);
  });

  it('260 changes committed before the socket (start=oldest) and 160 while it runs, each once in order', async () => {
    const { editor, workspaceId, object } = await world();
    const rows = (n: number, p: string) =>
      Array.from({ length: n }, (_, i) => ({ objectId: object.id, fieldValues: [fv('firstName', `${p}${i}`)] }));
    for (let i = 0; i < 13; i++) {
      const made = await call('POST', '/records/batch', { key: editor.key, body: rows(20, `pre${i}-`) });
      expect(made.status).toBe(201);
    }
    const s = await socket(workspaceId, { key: editor.key, query: '?start=oldest' });
    const t = await socket(workspaceId, { key: editor.key });
    for (let i = 0; i < 8; i++) {
      const made = await call('POST', '/records/batch', { key: editor.key, body: rows(20, `live${i}-`) });
      expect(made.status).toBe(201);
    }
    const feed = await feedAfter(editor.key, workspaceId);
    expect(feed).toHaveLength(420);
    await until(() => s.items.length >= 420 && t.items.length >= 160, 'every item');
    await sleep(300);
    expect(s.items).toEqual(feed);
    expect(t.items).toEqual(feed.slice(260));
  });

  it('sockets opened with ?after= while 6 writers commit get the feed exactly', async () => {
    const { editor, workspaceId, object } = await world();
    const after = await latest(editor.key, workspaceId);
    const opening = (async () => {
      const list: Socket[] = [];
      for (let i = 0; i < 6; i++) {
        list.push(await socket(workspaceId, { key: editor.key, query: `?after=${after}` }));
        await sleep(40);
      }
      return list;
    })();
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        const r = await createOne(editor.key, object.id, [fv('firstName', `W${w}`)]);
        for (let p = 0; p < 4; p++)
          await call('PATCH', `/workspaces/${workspaceId}/records/${r.id}`, {
            key: editor.key,
            body: { fieldValues: [fv('age', p)] },
          });
      }),
    );
    const sockets = await opening;
    const feed = await feedAfter(editor.key, workspaceId, after);
    expect(feed).toHaveLength(30);
    for (const s of sockets) {
      await until(() => s.items.length >= feed.length, 'every item');
      await sleep(100);
      expect(s.items).toEqual(feed);
    }
  });

  it('~1 MB changes past a page of 4 MiB, resumed at the cut; a fast event-stream reader is not closed', async () => {
    const { editor, workspaceId } = await world();
    const made = await admin('POST', '/admin/objects', {
      name: 'Big',
      workspaceIds: [workspaceId],
      fields: Array.from({ length: 10 }, (_, i) => ({ name: `f${i}`, type: 'text' })),
    });
    expect(made.status).toBe(201);
    const start = await latest(editor.key, workspaceId);
    const big = 'y'.repeat(95_000);
    const ids: number[] = [];
    for (let i = 0; i < 7; i++)
      ids.push(
        (
          await createOne(
            editor.key,
            made.body.id,
            Array.from({ length: 10 }, (_, f) => fv(`f${f}`, `${i}${big}`)),
          )
        ).id,
      );
    const feed = await feedAfter(editor.key, workspaceId, start);
    expect(feed.map((i) => i.recordId)).toEqual(ids);
    const page = await call('GET', `/workspaces/${workspaceId}/changes?after=${encodeURIComponent(start)}&limit=100`, {
      key: editor.key,
    });
    const cut = page.body.items.length;
    expect(cut).toBeLessThan(7);
    // Resumed after the last item of the first (cut) page, and from the start, over both kinds of stream.
    const s = await liveEvents(editor.key, workspaceId, `?after=${page.body.nextCursor}`);
    const w = await socket(workspaceId, { key: editor.key, query: `?after=${start}` });
    await until(() => s.events.length >= 7 - cut && w.items.length >= 7, 'the rest');
    await sleep(300);
    // The WebSocket gets every item once, in order, across the cut.
    expect(w.items.map((i) => i.recordId)).toEqual(ids);
    // A consumer reading as fast as it can is no slow consumer: no `close` event (4008) after a backlog of ~3 MB.
    expect(s.events.filter((e) => e.event === 'close').map((e) => e.data)).toEqual([]);
    expect(s.events.map((e) => JSON.parse(e.data).recordId)).toEqual(ids.slice(cut));
    await s.cancel();
  });
});

describe('live streams under attack: no 500', () => {
  it('query, headers and ids never answer 5xx', async () => {
    const { editor, workspaceId } = await world();
    const paths = [
      `?after=`,
      `?after=%ZZ`,
      `?after=${'A'.repeat(5000)}`,
      `?start=`,
      `?start=oldest&start=latest`,
      `?ticket=`,
      `?ticket=a&ticket=b`,
      `?ticket=${'x'.repeat(10_000)}`,
      `?after=MQ.x&ticket=lt_x`,
    ];
    const headerSets: Record<string, string>[] = [
      { Upgrade: 'WebSocket' },
      { Upgrade: 'WEBSOCKET', Accept: 'text/event-stream' },
      { Upgrade: 'h2c' },
      { Accept: 'text/event-stream;q=0' },
      { Accept: 'TEXT/EVENT-STREAM' },
      { Accept: '*/*' },
    ];
    const bad: string[] = [];
    for (const method of ['HEAD', 'POST', 'PUT', 'DELETE']) {
      const res = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live?ticket=x`, {
        method,
        headers: { Upgrade: 'websocket', Authorization: `Bearer ${editor.key}` },
      });
      if (res.status >= 500) bad.push(`${method}: ${res.status}`);
    }
    for (const ws of [workspaceId, 0, 99_999_999_999_999, 2 ** 53 + 10]) {
      for (const q of paths)
        for (const h of headerSets)
          for (const auth of [true, false]) {
            const res = await exports.default.fetch(`http://records.test/workspaces/${ws}/live${q}`, {
              headers: { ...h, ...(auth ? { Authorization: `Bearer ${editor.key}` } : {}) },
            });
            if (res.status >= 500) bad.push(`${ws} ${q.slice(0, 40)} ${JSON.stringify(h)} ${auth}: ${res.status}`);
            if (res.webSocket !== null) {
              res.webSocket.accept();
              res.webSocket.close(1000);
            } else await res.body?.cancel();
          }
    }
    expect(bad).toEqual([]);
  });

  it('a workspace deleted while a socket and a ticket are open', async () => {
    const user = await newUser('member');
    const workspaceId = await newWorkspace({ [user.id]: 'editor' });
    const s = await socket(workspaceId, { key: user.key });
    const ticket = (await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key: user.key })).body.ticket;
    const del = await admin('DELETE', `/admin/workspaces/${workspaceId}`);
    expect(del.status).toBe(204);
    const closed = await s.closed;
    expect(closed.code).toBe(4403);
    const res = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live?ticket=${ticket}`, {
      headers: { Upgrade: 'websocket' },
    });
    expect(res.status).toBe(404);
    expect(res.webSocket).toBeNull();
  });

  it('a tenant moved to another database while its socket is open keeps streaming', async () => {
    const tenant = await movingTenant('DB_2', 'LiveMover');
    await mover(tenant.id).hold();
    const s = await socket(tenant.workspaceId, { key: tenant.key });
    const ticket = (await call('POST', `/workspaces/${tenant.workspaceId}/live/tickets`, { key: tenant.key })).body
      .ticket;
    const a = await createOne(tenant.key, tenant.objectId, [fv('firstName', 'Before')]);
    await until(() => s.items.length === 1, 'the item before the move');
    const started = await call('POST', `/tenants/${tenant.id}/move`, { key: ADMIN_TOKEN, body: { database: 'DB_3' } });
    expect(started.status).toBe(202);
    const done = await stepMove(tenant.id, started.body.id);
    expect(done.status).toBe('succeeded');
    const b = await createOne(tenant.key, tenant.objectId, [fv('firstName', 'After')]);
    let closedEarly: unknown;
    void s.closed.then((c) => (closedEarly = c));
    await until(() => s.items.length >= 2, 'the item after the move', 5_000).catch(() => undefined);
    await sleep(1_500);
    expect(s.items.map((i) => i.recordId)).toEqual([a.id, b.id]);
    expect(closedEarly).toBeUndefined();
    s.socket.close(1000);
    const byTicket = await exports.default.fetch(
      `http://records.test/workspaces/${tenant.workspaceId}/live?ticket=${ticket}`,
      { headers: { Upgrade: 'websocket' } },
    );
    expect(byTicket.status).toBe(101);
  });

  it('a tenant deleted while its sockets (key and ticket) are open', async () => {
    const tenant = (await admin('POST', '/tenants', { name: 'Gone', database: 'DB_3' })).body;
    const as = (method: string, path: string, body?: unknown) =>
      call(method, path, { key: tenant.adminKey, ...(body === undefined ? {} : { body }) });
    const user = (await as('POST', '/admin/users', { name: 'e' })).body;
    const key = (await as('POST', `/admin/users/${user.id}/keys`)).body.key as string;
    const workspaceId = (await as('POST', '/admin/workspaces', { name: 'ws' })).body.id as number;
    await as('PUT', `/admin/workspaces/${workspaceId}/members/${user.id}`, { role: 'editor' });
    const s = await socket(workspaceId, { key: key });
    const ticket = (await call('POST', `/workspaces/${workspaceId}/live/tickets`, { key })).body.ticket;
    const del = await admin('DELETE', `/tenants/${tenant.id}`);
    expect(del.status).toBeLessThan(300);
    const closed = await Promise.race([s.closed, sleep(5_000).then(() => ({ code: -1, reason: 'still open' }))]);
    expect([4401, 4403]).toContain(closed.code);
    const res = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/live?ticket=${ticket}`, {
      headers: { Upgrade: 'websocket' },
    });
    expect(res.status).toBeLessThan(500);
    expect(res.webSocket).toBeNull();
  });
});
