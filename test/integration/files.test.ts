import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import {
  admin,
  bytesOf,
  call,
  createOne,
  expectProblem,
  fv,
  getFile,
  heldFile,
  newUser,
  objectIn,
  uploadFile,
} from './helpers.ts';

const FIELDS = [
  { name: 'title', type: 'text', required: true },
  { name: 'doc', type: 'file' },
  { name: 'photos', type: 'file', multiple: true },
];

const setup = () => objectIn({ name: 'Case', nameTemplate: '{title}', fields: FIELDS });

async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** Whether two byte arrays are equal (vitest's deep equality walks megabytes slowly). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

const r2Keys = async (): Promise<string[]> => (await env.FILES.list()).objects.map((o) => o.key);

describe('files: upload and download', () => {
  it('an upload answers its id, name, size, type and SHA-256; the download gives the same bytes back', async () => {
    const { editor, workspaceId } = await setup();
    const bytes = bytesOf(3 * 1024 * 1024 + 17);
    const up = await uploadFile(editor.key, workspaceId, 'scan é.bin', bytes);
    expect(up.status).toBe(201);
    expect(up.body).toEqual({
      id: expect.any(Number),
      name: 'scan é.bin',
      size: bytes.length,
      contentType: 'application/octet-stream',
      sha256: await sha256(bytes),
      createdAt: expect.any(Number),
    });
    expect(up.headers.get('Location')).toBe(`/files/${up.body.id}`);
    const down = await getFile(editor.key, up.body.id);
    expect(down.status).toBe(200);
    expect(sameBytes(new Uint8Array(await down.arrayBuffer()), bytes)).toBe(true);
    expect(down.headers.get('ETag')).toBe(`"${up.body.sha256}"`);
    expect(down.headers.get('Content-Length')).toBe(String(bytes.length));
    expect(down.headers.get('X-Content-Type-Options')).toBe('nosniff');
    expect(down.headers.get('Content-Security-Policy')).toBe('sandbox');
    expect(down.headers.get('Content-Disposition')).toBe(
      `attachment; filename="scan _.bin"; filename*=UTF-8''scan%20%C3%A9.bin`,
    );
  });

  it('images, PDFs and plain text are shown in place; HTML and SVG are attachments', async () => {
    const { editor, workspaceId } = await setup();
    const cases: [string, string][] = [
      ['image/png', 'inline'],
      ['application/pdf', 'inline'],
      ['text/plain; charset=utf-8', 'inline'],
      ['text/html', 'attachment'],
      ['image/svg+xml', 'attachment'],
    ];
    for (const [type, disposition] of cases) {
      const up = await uploadFile(editor.key, workspaceId, 'f', bytesOf(10), type);
      const down = await getFile(editor.key, up.body.id);
      expect(down.headers.get('Content-Type')).toBe(type);
      expect(down.headers.get('Content-Disposition')?.split(';')[0]).toBe(disposition);
      await down.arrayBuffer();
    }
  });

  it('a Range gives 206 with those bytes; past the end 416; If-None-Match with its ETag 304', async () => {
    const { editor, workspaceId } = await setup();
    const bytes = bytesOf(1000);
    const up = await uploadFile(editor.key, workspaceId, 'r.bin', bytes);
    const part = await getFile(editor.key, up.body.id, { Range: 'bytes=100-199' });
    expect(part.status).toBe(206);
    expect(part.headers.get('Content-Range')).toBe('bytes 100-199/1000');
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.slice(100, 200));
    const tail = await getFile(editor.key, up.body.id, { Range: 'bytes=-10' });
    expect(new Uint8Array(await tail.arrayBuffer())).toEqual(bytes.slice(990));
    const past = await getFile(editor.key, up.body.id, { Range: 'bytes=1000-' });
    expect(past.status).toBe(416);
    expect(past.headers.get('Content-Range')).toBe('bytes */1000');
    await past.arrayBuffer();
    const same = await getFile(editor.key, up.body.id, { 'If-None-Match': `"${up.body.sha256}"` });
    expect(same.status).toBe(304);
    expect(await same.text()).toBe('');
    const other = await getFile(editor.key, up.body.id, { 'If-None-Match': '"other"' });
    expect(other.status).toBe(200);
    await other.arrayBuffer();
  });
});

describe('files: bad uploads store nothing', () => {
  it('an empty body, a bad name, no length, a viewer: a clear 4xx, nothing in D1 or R2', async () => {
    const { editor, viewer, workspaceId } = await setup();
    const before = await r2Keys();
    const rows = async () => (await env.DB.prepare('SELECT count(*) AS n FROM files').first<{ n: number }>())?.n;
    const rowsBefore = await rows();
    const empty = await uploadFile(editor.key, workspaceId, 'e.txt', new Uint8Array(0));
    expectProblem(empty, 400, 'invalid_request');
    expect(empty.body.errors).toEqual([expect.objectContaining({ header: 'Content-Length', code: 'empty' })]);
    const long = await uploadFile(editor.key, workspaceId, 'x'.repeat(256), bytesOf(5));
    expectProblem(long, 400, 'invalid_request');
    expect(long.body.errors).toEqual([expect.objectContaining({ query: 'name', code: 'too_long' })]);
    expect((await uploadFile(editor.key, workspaceId, 'é'.repeat(255), bytesOf(5))).status).toBe(201);
    for (const name of ['a/b', 'a\u0000b', 'tab\there', 'del\u007f']) {
      const bad = await uploadFile(editor.key, workspaceId, name, bytesOf(5));
      expectProblem(bad, 400, 'invalid_request');
      expect(bad.body.errors).toEqual([expect.objectContaining({ query: 'name', code: 'invalid_value' })]);
    }
    const noName = await call('POST', `/workspaces/${workspaceId}/files`, { key: editor.key, raw: 'abc' });
    expectProblem(noName, 400, 'invalid_request');
    expect(noName.body.errors).toEqual([expect.objectContaining({ query: 'name', code: 'required' })]);
    const tooBig = await exports.default.fetch(`http://records.test/workspaces/${workspaceId}/files?name=big`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${editor.key}`, 'Content-Length': String(100 * 1024 * 1024 + 1) },
      body: new ReadableStream({ start: (c) => c.close() }),
      duplex: 'half',
    } as RequestInit);
    expect(tooBig.status).toBe(413);
    expect(((await tooBig.json()) as { code: string }).code).toBe('payload_too_large');
    expectProblem(await uploadFile(viewer.key, workspaceId, 'v.txt', bytesOf(5)), 403, 'forbidden');
    expect(await r2Keys()).toHaveLength(before.length + 1);
    expect(await rows()).toBe((rowsBefore ?? 0) + 1);
  });

  it('a stranger to the workspace gets 404; no key 401', async () => {
    const { stranger, workspaceId } = await setup();
    expectProblem(await uploadFile(stranger.key, workspaceId, 's.txt', bytesOf(5)), 404, 'not_found');
    expectProblem(await uploadFile('rk_nokey', workspaceId, 's.txt', bytesOf(5)), 401, 'unauthorized');
  });
});

describe('files: in records', () => {
  it('a record holds its files as {id, name, size, contentType}; its readers download them', async () => {
    const { editor, viewer, stranger, workspaceId, object } = await setup();
    const a = (await uploadFile(editor.key, workspaceId, 'a.pdf', bytesOf(50), 'application/pdf')).body;
    const b = (await uploadFile(editor.key, workspaceId, 'b.png', bytesOf(60), 'image/png')).body;
    // Before any record holds it, only its uploader downloads it.
    expect((await getFile(viewer.key, a.id)).status).toBe(404);
    const record = await createOne(editor.key, object.id, [
      fv('title', 'One'),
      fv('doc', [heldFile(a)]),
      fv('photos', [heldFile(b), heldFile(a)].slice(0, 1)),
    ]);
    expect(record.fieldValues).toEqual([fv('title', 'One'), fv('doc', [heldFile(a)]), fv('photos', [heldFile(b)])]);
    const read = await call('GET', `/workspaces/${workspaceId}/records/${record.id}`, { key: viewer.key });
    expect(read.body.fieldValues).toEqual(record.fieldValues);
    const down = await getFile(viewer.key, a.id);
    expect(down.status).toBe(200);
    expect(new Uint8Array(await down.arrayBuffer())).toEqual(bytesOf(50));
    // A stranger, a missing id and another tenant's id answer alike.
    const missing = await getFile(stranger.key, 999_999_999);
    const hidden = await getFile(stranger.key, a.id);
    expect(hidden.status).toBe(404);
    expect(await hidden.json()).toEqual(await missing.json());
  });

  it('a file held by one record cannot go in another; a file uploaded by someone else neither', async () => {
    const { editor, workspaceId, object } = await setup();
    const other = await newUser('other-editor');
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${other.id}`, { role: 'editor' });
    const a = (await uploadFile(editor.key, workspaceId, 'a.txt', bytesOf(5), 'text/plain')).body;
    await createOne(editor.key, object.id, [fv('title', 'First'), fv('doc', [heldFile(a)])]);
    const again = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'Second'), fv('doc', [heldFile(a)])] }],
    });
    expectProblem(again, 422, 'unprocessable');
    expect(again.body.errors).toEqual([
      expect.objectContaining({ pointer: '/0/fieldValues/1/value/0', code: 'invalid_file' }),
    ]);
    const b = (await uploadFile(editor.key, workspaceId, 'b.txt', bytesOf(5), 'text/plain')).body;
    const theirs = await call('POST', '/records/batch', {
      key: other.key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'Theirs'), fv('doc', [heldFile(b)])] }],
    });
    expect(theirs.body.errors).toEqual([
      expect.objectContaining({ pointer: '/0/fieldValues/1/value/0', code: 'invalid_file' }),
    ]);
    const never = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        { objectId: object.id, fieldValues: [fv('title', 'Never'), fv('doc', [{ ...heldFile(b), id: 123456789 }])] },
      ],
    });
    expect(never.body.errors).toEqual([
      expect.objectContaining({ pointer: '/0/fieldValues/1/value/0', code: 'invalid_file' }),
    ]);
    const renamed = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        { objectId: object.id, fieldValues: [fv('title', 'Renamed'), fv('doc', [{ ...heldFile(b), name: 'x' }])] },
      ],
    });
    expect(renamed.body.errors).toEqual([
      expect.objectContaining({ pointer: '/0/fieldValues/1/value/0', code: 'invalid_file' }),
    ]);
    const many = Array.from({ length: 21 }, (_, i) => ({ ...heldFile(b), id: b.id + i }));
    const tooMany = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'Many'), fv('photos', many)] }],
    });
    expectProblem(tooMany, 422, 'unprocessable');
    expect(tooMany.body.errors).toEqual([
      expect.objectContaining({ pointer: '/0/fieldValues/1/value', code: 'invalid_value' }),
    ]);
  });
});
