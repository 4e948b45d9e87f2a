import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, countRows, expectProblem, newUser, newWorkspace, world } from './helpers.ts';

/**
 * Webhook subscription writes on the write ledger, with Idempotency-Key: a keyed write replays its
 * first answer byte for byte and writes nothing more; the key is the caller's own.
 */

const RECEIVER = env.WEBHOOK_RECEIVER;
let names = 0;
const hookUrl = (): string => `${RECEIVER}/hook/keys-${Date.now()}-${names++}`;

/** A call answered as raw text, to compare replays byte for byte. */
async function raw(method: string, path: string, apiKey: string, options: { body?: unknown; key?: string } = {}) {
  const headers: Record<string, string> = { Authorization: `Bearer ${apiKey}` };
  if (options.key !== undefined) headers['Idempotency-Key'] = options.key;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await exports.default.fetch(`http://records.test${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const hooksIn = async (workspaceId: number) =>
  (
    await env.DB.prepare('SELECT id, secret, status FROM webhooks WHERE workspace_id = ? ORDER BY id')
      .bind(workspaceId)
      .all<{ id: number; secret: string; status: string }>()
  ).results;

const keyRows = async (key: string) =>
  (await env.DB.prepare('SELECT count(*) AS n FROM idempotency_keys WHERE key = ?').bind(key).first<{ n: number }>())
    ?.n ?? 0;

/** A feed cursor of the workspace: the cursor of its first change. */
async function firstCursor(apiKey: string, workspaceId: number, objectId: number): Promise<string> {
  const created = await call('POST', '/records/batch', {
    key: apiKey,
    body: [{ objectId, fieldValues: [{ fieldName: 'firstName', value: 'Ada' }] }],
  });
  expect(created.status).toBe(201);
  const page = await call('GET', `/workspaces/${workspaceId}/changes?limit=1`, { key: apiKey });
  return page.body.items[0].cursor as string;
}

describe('webhook writes: one ledger row each, Idempotency-Key replays byte for byte', () => {
  it(
    'a keyed create is replayed byte for byte with the same secret, one subscription; another body is ' + '422',
    async () => {
      const { editor, workspaceId } = await world();
      const path = `/workspaces/${workspaceId}/webhooks`;
      const body = { url: hookUrl(), types: ['created'] };
      const ledger = await countRows('writes');
      const first = await raw('POST', path, editor.key, { body, key: 'hook-1' });
      const again = await raw('POST', path, editor.key, { body, key: 'hook-1' });
      expect(first.status).toBe(201);
      expect(first.headers.get('Idempotent-Replayed')).toBeNull();
      expect(again.status).toBe(201);
      expect(again.text).toBe(first.text);
      expect(again.headers.get('Idempotent-Replayed')).toBe('true');
      expect(again.headers.get('Content-Type')).toBe('application/json');
      const created = JSON.parse(first.text);
      expect(Object.keys(created)).toEqual([
        'id',
        'url',
        'types',
        'objectIds',
        'createdAt',
        'status',
        'reason',
        'secret',
      ]);
      expect(created).toMatchObject({ url: body.url, types: ['created'], objectIds: null, status: 'active' });
      // One subscription, signing with the secret the answer (and its replay) shows.
      const hooks = await hooksIn(workspaceId);
      expect(hooks).toEqual([{ id: created.id, secret: created.secret, status: 'active' }]);
      expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
      // The ledger keeps the answer without the secret: the subscription's row is its only copy.
      expect(await countRows('writes')).toBe(ledger + 1);
      const held = await env.DB.prepare('SELECT count(*) AS n FROM writes WHERE instr(outcome, ?) > 0')
        .bind(created.secret.slice('whsec_'.length))
        .first<{ n: number }>();
      expect(held?.n).toBe(0);

      const other = await raw('POST', path, editor.key, { body: { url: hookUrl() }, key: 'hook-1' });
      expect(other.status).toBe(422);
      expect(other.headers.get('Content-Type')).toBe('application/problem+json');
      expect(JSON.parse(other.text).errors[0]).toMatchObject({
        header: 'Idempotency-Key',
        code: 'idempotency_key_reused',
      });
      expect(await hooksIn(workspaceId)).toHaveLength(1);
      // The same body sent without the key is a new subscription, with a secret of its own.
      const unkeyed = await raw('POST', path, editor.key, { body });
      expect(unkeyed.status).toBe(201);
      expect(JSON.parse(unkeyed.text).secret).not.toBe(created.secret);
      expect(await hooksIn(workspaceId)).toHaveLength(2);
    },
  );

  it(
    'keys are the caller’s own and the path’s: another editor or workspace with the same key runs ' + 'afresh',
    async () => {
      const { editor, workspaceId } = await world();
      const colleague = await newUser('colleague');
      await call('PUT', `/admin/workspaces/${workspaceId}/members/${colleague.id}`, {
        key: 'test-admin-token',
        body: { role: 'editor' },
      });
      const second = await newWorkspace({ [editor.id]: 'editor' });
      const body = { url: hookUrl() };
      const mine = await raw('POST', `/workspaces/${workspaceId}/webhooks`, editor.key, { body, key: 'shared' });
      const theirs = await raw('POST', `/workspaces/${workspaceId}/webhooks`, colleague.key, { body, key: 'shared' });
      // The same workspace written with leading zeros is the same operation: replayed.
      const padded = await raw('POST', `/workspaces/00${workspaceId}/webhooks/`, editor.key, { body, key: 'shared' });
      const elsewhere = await raw('POST', `/workspaces/${second}/webhooks`, editor.key, { body, key: 'shared' });
      expect([mine.status, theirs.status, padded.status, elsewhere.status]).toEqual([201, 201, 201, 201]);
      expect(theirs.headers.get('Idempotent-Replayed')).toBeNull();
      expect(JSON.parse(theirs.text).id).not.toBe(JSON.parse(mine.text).id);
      expect(padded.text).toBe(mine.text);
      expect(padded.headers.get('Idempotent-Replayed')).toBe('true');
      expect(elsewhere.headers.get('Idempotent-Replayed')).toBeNull();
      expect(await hooksIn(workspaceId)).toHaveLength(2);
      expect(await hooksIn(second)).toHaveLength(1);
    },
  );

  it(
    '20 concurrent creates with one key: one subscription; every 201 the same bytes, the others 409 ' +
      'with Retry-After',
    async () => {
      const { editor, workspaceId } = await world();
      const body = { url: hookUrl() };
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          raw('POST', `/workspaces/${workspaceId}/webhooks`, editor.key, { body, key: 'race' }),
        ),
      );
      const created = answers.filter((a) => a.status === 201);
      const running = answers.filter((a) => a.status === 409);
      expect(created.length + running.length).toBe(20);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((a) => a.text)).size).toBe(1);
      for (const a of running) {
        expect(a.headers.get('Retry-After')).toBe('1');
        expect(JSON.parse(a.text).code).toBe('conflict');
      }
      const hooks = await hooksIn(workspaceId);
      expect(hooks.map((h) => h.id)).toEqual([JSON.parse(created[0]?.text ?? '{}').id]);
    },
  );

  it('a keyed pause replays its answer even after a resume, and writes nothing', async () => {
    const { editor, workspaceId } = await world();
    const made = await call('POST', `/workspaces/${workspaceId}/webhooks`, {
      key: editor.key,
      body: { url: hookUrl() },
    });
    const path = `/workspaces/${workspaceId}/webhooks/${made.body.id}`;
    const pause = await raw('PATCH', path, editor.key, { body: { status: 'disabled' }, key: 'pause-1' });
    expect(pause.status).toBe(200);
    expect(JSON.parse(pause.text)).toEqual({
      id: made.body.id,
      url: made.body.url,
      types: null,
      objectIds: null,
      createdAt: made.body.createdAt,
      status: 'disabled',
      reason: 'paused by an editor',
    });
    expect((await hooksIn(workspaceId))[0]?.status).toBe('disabled');
    // What a later read shows is what the write answered.
    const listed = await call('GET', `/workspaces/${workspaceId}/webhooks`, { key: editor.key });
    expect(listed.body.items).toEqual([JSON.parse(pause.text)]);

    const resume = await raw('PATCH', path, editor.key, { body: { status: 'active' }, key: 'resume-1' });
    expect([resume.status, JSON.parse(resume.text).status, JSON.parse(resume.text).reason]).toEqual([
      200,
      'active',
      null,
    ]);
    const again = await raw('PATCH', path, editor.key, { body: { status: 'disabled' }, key: 'pause-1' });
    expect(again.text).toBe(pause.text);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect((await hooksIn(workspaceId))[0]?.status).toBe('active');
    const reused = await raw('PATCH', path, editor.key, { body: { status: 'active' }, key: 'pause-1' });
    expect(JSON.parse(reused.text).errors[0].code).toBe('idempotency_key_reused');
  });

  it('a keyed delete replays 204; a keyed write that failed stores nothing and its retry runs afresh', async () => {
    const { editor, viewer, workspaceId } = await world();
    const made = await call('POST', `/workspaces/${workspaceId}/webhooks`, {
      key: editor.key,
      body: { url: hookUrl() },
    });
    const path = `/workspaces/${workspaceId}/webhooks/${made.body.id}`;
    // A viewer is refused before the key is looked at: nothing stored under it.
    expectProblem(
      await call('DELETE', path, { key: viewer.key, headers: { 'Idempotency-Key': 'del-v' } }),
      403,
      'forbidden',
    );
    expect(await keyRows('del-v')).toBe(0);

    const first = await raw('DELETE', path, editor.key, { key: 'del-1' });
    const again = await raw('DELETE', path, editor.key, { key: 'del-1' });
    expect([first.status, first.text, again.status, again.text]).toEqual([204, '', 204, '']);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await hooksIn(workspaceId)).toEqual([]);
    // Unkeyed, the subscription is gone: 404, and a 404 under a key stores nothing.
    expectProblem(await call('DELETE', path, { key: editor.key }), 404, 'not_found');
    expectProblem(
      await call('DELETE', path, { key: editor.key, headers: { 'Idempotency-Key': 'del-2' } }),
      404,
      'not_found',
    );
    expect(await keyRows('del-2')).toBe(0);
    const missing = `/workspaces/${workspaceId}/webhooks/999999`;
    const paused = await call('PATCH', missing, {
      key: editor.key,
      body: { status: 'disabled' },
      headers: { 'Idempotency-Key': 'pause-missing' },
    });
    expectProblem(paused, 404, 'not_found');
    expect(await keyRows('pause-missing')).toBe(0);
    // A subscription made with that key afterwards runs afresh.
    const later = await call('POST', `/workspaces/${workspaceId}/webhooks`, {
      key: editor.key,
      body: { url: hookUrl() },
      headers: { 'Idempotency-Key': 'del-2' },
    });
    expect(later.status).toBe(201);
    expect(later.headers.get('Idempotent-Replayed')).toBeNull();
  });

  it(
    'a keyed replay is replayed byte for byte; another cursor under its key is 422; a malformed key is ' + '400',
    async () => {
      const { editor, workspaceId, object } = await world();
      const made = await call('POST', `/workspaces/${workspaceId}/webhooks`, {
        key: editor.key,
        body: { url: hookUrl() },
      });
      const cursor = await firstCursor(editor.key, workspaceId, object.id);
      const path = `/workspaces/${workspaceId}/webhooks/${made.body.id}/replay`;
      const first = await raw('POST', path, editor.key, { body: { after: cursor }, key: 'replay-1' });
      expect(first.status).toBe(200);
      expect(JSON.parse(first.text)).toMatchObject({ id: made.body.id, status: 'active', reason: null });
      const ledger = await countRows('writes');
      const again = await raw('POST', path, editor.key, { body: { after: cursor }, key: 'replay-1' });
      expect(again.text).toBe(first.text);
      expect(again.headers.get('Idempotent-Replayed')).toBe('true');
      expect(await countRows('writes')).toBe(ledger);

      await firstCursor(editor.key, workspaceId, object.id);
      const page = await call('GET', `/workspaces/${workspaceId}/changes?limit=2`, { key: editor.key });
      expect(page.body.items[1].cursor).not.toBe(cursor);
      const other = await raw('POST', path, editor.key, {
        body: { after: page.body.items[1].cursor },
        key: 'replay-1',
      });
      expect(other.status).toBe(422);
      expect(JSON.parse(other.text).errors[0].code).toBe('idempotency_key_reused');

      // A bad body and a bad key header are one 400 naming both.
      const bad = await call('POST', path, {
        key: editor.key,
        body: { after: 1 },
        headers: { 'Idempotency-Key': 'bad key' },
      });
      expectProblem(bad, 400, 'invalid_request');
      expect(bad.body.errors.map((e: any) => e.header ?? e.pointer).sort()).toEqual(['/after', 'Idempotency-Key']);
      const badDelete = await call('DELETE', `/workspaces/${workspaceId}/webhooks/${made.body.id}`, {
        key: editor.key,
        headers: { 'Idempotency-Key': 'bad key' },
      });
      expectProblem(badDelete, 400, 'invalid_request');
      expect(await hooksIn(workspaceId)).toHaveLength(1);
    },
  );
});
