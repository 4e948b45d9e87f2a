import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { bytesOf, call, expectProblem, getFile, objectIn, runScheduled, type Answer } from './helpers.ts';

const MiB = 1024 * 1024;
const setup = () => objectIn({ name: 'Case', fields: [{ name: 'doc', type: 'file' }] });

async function send(key: string, method: string, path: string, bytes?: Uint8Array): Promise<Answer> {
  const res = await exports.default.fetch(`http://records.test${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${key}`,
      'Content-Type': 'video/mp4',
      ...(bytes === undefined ? {} : { 'Content-Length': String(bytes.length) }),
    },
    ...(bytes === undefined ? {} : { body: bytes }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

const start = (key: string, workspaceId: number, name = 'big.mp4') =>
  send(key, 'POST', `/workspaces/${workspaceId}/files/uploads?name=${name}`);
const part = (key: string, id: number, n: number, bytes: Uint8Array) =>
  send(key, 'PUT', `/files/uploads/${id}/parts/${n}`, bytes);
const complete = (key: string, id: number) => send(key, 'POST', `/files/uploads/${id}/complete`);

async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

describe('files in parts', () => {
  it('a part out of order, after a small one or larger than the first: 422 at partNumber, nothing kept', async () => {
    const { editor, stranger, workspaceId } = await setup();
    const id = (await start(editor.key, workspaceId)).body.id;
    const outOfOrder = await part(editor.key, id, 2, bytesOf(5 * MiB));
    expectProblem(outOfOrder, 422, 'unprocessable');
    expect(outOfOrder.body.errors).toEqual([
      expect.objectContaining({ parameter: 'partNumber', code: 'part_out_of_order' }),
    ]);
    expect((await part(editor.key, id, 1, bytesOf(1 * MiB))).status).toBe(200);
    const afterSmall = await part(editor.key, id, 2, bytesOf(1 * MiB));
    expectProblem(afterSmall, 422, 'unprocessable');
    expect(afterSmall.body.errors).toEqual([
      expect.objectContaining({ parameter: 'partNumber', code: 'part_too_small' }),
    ]);
    const other = (await start(editor.key, workspaceId)).body.id;
    expect((await part(editor.key, other, 1, bytesOf(5 * MiB))).status).toBe(200);
    const larger = await part(editor.key, other, 2, bytesOf(5 * MiB + 1));
    expect(larger.body.errors).toEqual([expect.objectContaining({ parameter: 'partNumber', code: 'part_too_large' })]);
    // Another user: as missing. An empty part: 400.
    expectProblem(await part(stranger.key, other, 2, bytesOf(10)), 404, 'not_found');
    expectProblem(await part(editor.key, other, 2, new Uint8Array(0)), 400, 'invalid_request');
    const none = (await start(editor.key, workspaceId)).body.id;
    expectProblem(await complete(editor.key, none), 422, 'unprocessable');
    // Given up: gone, and nothing of it in R2.
    expect((await send(editor.key, 'DELETE', `/files/uploads/${other}`)).status).toBe(204);
    expectProblem(await complete(editor.key, other), 404, 'not_found');
    expect((await env.FILES.list()).objects.map((o) => o.key)).not.toContain(`files/1/${other}`);
  });

  it('an upload left 24 h is given up by the cron', async () => {
    const { editor, workspaceId } = await setup();
    const id = (await start(editor.key, workspaceId)).body.id;
    expect((await part(editor.key, id, 1, bytesOf(100))).status).toBe(200);
    await env.DB.prepare('UPDATE file_uploads SET created_at = created_at - 86400001 WHERE id = ?').bind(id).run();
    await runScheduled();
    expect(await env.DB.prepare('SELECT id FROM file_uploads WHERE id = ?').bind(id).first()).toBeNull();
    expectProblem(await call('POST', `/files/uploads/${id}/complete`, { key: editor.key }), 404, 'not_found');
  });
  // Last: what it keeps counts against the tenant's quota.
  it('parts sent in order join into one file: its size, SHA-256 and bytes', async () => {
    const { editor, workspaceId } = await setup();
    const started = await start(editor.key, workspaceId);
    expect(started.status).toBe(201);
    expect(started.body).toEqual({
      id: expect.any(Number),
      name: 'big.mp4',
      contentType: 'video/mp4',
      parts: [],
      createdAt: expect.any(Number),
    });
    // Within the test build's quota of 8 MiB: a full part and a smaller last one.
    const whole = bytesOf(5 * MiB + 2 * MiB + 123);
    const id = started.body.id;
    expect((await part(editor.key, id, 1, whole.slice(0, 5 * MiB))).body).toEqual({ partNumber: 1, size: 5 * MiB });
    expect((await part(editor.key, id, 2, whole.slice(5 * MiB))).status).toBe(200);
    const done = await complete(editor.key, id);
    expect(done.status).toBe(201);
    expect(done.body).toEqual({
      id,
      name: 'big.mp4',
      size: whole.length,
      contentType: 'video/mp4',
      sha256: await sha256(whole),
      createdAt: expect.any(Number),
    });
    const down = await getFile(editor.key, id);
    const got = new Uint8Array(await down.arrayBuffer());
    expect(got.length).toBe(whole.length);
    expect(await sha256(got)).toBe(done.body.sha256);
    expect(down.headers.get('ETag')).toBe(`"${done.body.sha256}"`);
    // Completed, the upload is no more.
    expectProblem(await complete(editor.key, id), 404, 'not_found');
  });
});
