import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { TENANT_BLOCK } from '../../src/domain/tenant.ts';
import {
  admin,
  bytesOf,
  call,
  createOne,
  download,
  expectProblem,
  fv,
  getFile,
  heldFile,
  objectIn,
  runScheduled,
  uploadFile,
} from './helpers.ts';
import { database, mover, stepMove } from './moving.ts';

const FIELDS = [
  { name: 'title', type: 'text', required: true },
  { name: 'doc', type: 'file' },
];

const r2Keys = async (): Promise<string[]> => (await env.FILES.list()).objects.map((o) => o.key);
const fileRow = (id: number) => env.DB.prepare('SELECT record_id, free_since FROM files WHERE id = ?').bind(id).first();

/** A tenant of its own with an editor of a workspace holding an object with a file field. */
async function tenantWithFiles(database = 'DB_2') {
  const tenant = await admin('POST', '/tenants', { name: `files ${Math.random()}`, database });
  expect(tenant.status).toBe(201);
  const as = (method: string, path: string, body?: unknown) =>
    call(method, path, { key: tenant.body.adminKey, ...(body === undefined ? {} : { body }) });
  const user = await as('POST', '/admin/users', { name: 'editor' });
  const key = (await as('POST', `/admin/users/${user.body.id}/keys`)).body.key as string;
  const workspaceId = (await as('POST', '/admin/workspaces', { name: 'ws' })).body.id as number;
  await as('PUT', `/admin/workspaces/${workspaceId}/members/${user.body.id}`, { role: 'editor' });
  const object = (await as('POST', '/admin/objects', { name: 'Case', workspaceIds: [workspaceId], fields: FIELDS }))
    .body;
  return { tenant: tenant.body, key, workspaceId, object };
}

describe('files follow their records', () => {
  it('a deleted record keeps its files for a restore; they are read again once it is restored', async () => {
    const { editor, viewer, workspaceId, object } = await objectIn({ name: 'Case', fields: FIELDS });
    const file = (await uploadFile(editor.key, workspaceId, 'a.txt', bytesOf(20), 'text/plain')).body;
    const record = await createOne(editor.key, object.id, [fv('title', 'One'), fv('doc', [heldFile(file)])]);
    expect((await getFile(viewer.key, file.id)).status).toBe(200);
    await call('DELETE', `/workspaces/${workspaceId}/records/${record.id}`, { key: editor.key });
    // Deleted: no one downloads it (the uploader neither), but nothing is removed.
    expect((await getFile(viewer.key, file.id)).status).toBe(404);
    expect((await getFile(editor.key, file.id)).status).toBe(404);
    await runScheduled();
    expect(await fileRow(file.id)).toMatchObject({ record_id: record.id });
    await call('POST', `/workspaces/${workspaceId}/records/${record.id}/restore`, { key: editor.key });
    const back = await getFile(viewer.key, file.id);
    expect(new Uint8Array(await back.arrayBuffer())).toEqual(bytesOf(20));
  });

  it('a file a record lets go, and an upload no record takes, is removed 24 h later, bytes and row', async () => {
    const { editor, workspaceId, object } = await objectIn({ name: 'Case', fields: FIELDS });
    const kept = (await uploadFile(editor.key, workspaceId, 'kept.txt', bytesOf(7))).body;
    const dropped = (await uploadFile(editor.key, workspaceId, 'dropped.txt', bytesOf(8))).body;
    const never = (await uploadFile(editor.key, workspaceId, 'never.txt', bytesOf(9))).body;
    const record = await createOne(editor.key, object.id, [fv('title', 'One'), fv('doc', [heldFile(dropped)])]);
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('doc', [heldFile(kept)])] },
    });
    expect(patched.status).toBe(200);
    expect(await fileRow(dropped.id)).toMatchObject({ record_id: null });
    // Within 24 h nothing goes: the uploader may still put it in a record.
    const keyOf = async (id: number) =>
      (await env.DB.prepare('SELECT object_key FROM files WHERE id = ?').bind(id).first<{ object_key: string }>())
        ?.object_key as string;
    const [keptKey, droppedKey, neverKey] = [await keyOf(kept.id), await keyOf(dropped.id), await keyOf(never.id)];
    expect(keptKey).toMatch(/^files\/1\//);
    await runScheduled();
    expect(await r2Keys()).toEqual(expect.arrayContaining([keptKey, droppedKey, neverKey]));
    await env.DB.prepare('UPDATE files SET free_since = free_since - 86400001 WHERE id IN (?, ?)')
      .bind(dropped.id, never.id)
      .run();
    await runScheduled();
    const keys = await r2Keys();
    expect(keys).toContain(keptKey);
    expect(keys).not.toContain(droppedKey);
    expect(keys).not.toContain(neverKey);
    expect(await fileRow(never.id)).toBeNull();
    expect((await getFile(editor.key, never.id)).status).toBe(404);
    expect((await getFile(editor.key, kept.id)).status).toBe(200);
  });

  it('an export names files by id and the same export imported back changes nothing', async () => {
    const { editor, workspaceId, object } = await objectIn({ name: 'Case', fields: FIELDS });
    const file = (await uploadFile(editor.key, workspaceId, 'a.pdf', bytesOf(30), 'application/pdf')).body;
    const record = await createOne(editor.key, object.id, [fv('title', 'One'), fv('doc', [heldFile(file)])]);
    const res = await download(editor.key, `/workspaces/${workspaceId}/records/export?objectId=${object.id}`);
    const text = await res.text();
    expect(JSON.parse(text.trim()).fieldValues).toEqual([fv('title', 'One'), fv('doc', [heldFile(file)])]);
    const imported = await call('POST', `/workspaces/${workspaceId}/imports?objectId=${object.id}&mode=update`, {
      key: editor.key,
      raw: text,
      headers: { 'Content-Type': 'application/x-ndjson' },
    });
    expect(imported.status).toBe(202);
    let state = imported.body;
    while (state.status === 'queued' || state.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 50));
      state = (await call('GET', `/imports/${state.id}`, { key: editor.key })).body;
    }
    expect(state.rows).toMatchObject({ processed: 1, unchanged: 1, failed: 0 });
    const read = await call('GET', `/records/${record.id}`, { key: editor.key });
    expect(read.body.version).toBe(record.version);
    expect(await fileRow(file.id)).toMatchObject({ record_id: record.id });
  });
});

describe('files follow their tenant', () => {
  it("counts a tenant's file bytes; past FILE_QUOTA_BYTES an upload is 413 and nothing is kept", async () => {
    const { tenant, key, workspaceId } = await tenantWithFiles();
    const first = await uploadFile(key, workspaceId, 'big.bin', bytesOf(5 * 1024 * 1024));
    expect(first.status).toBe(201);
    expect(first.body.id).toBeGreaterThanOrEqual((tenant.id - 1) * TENANT_BLOCK);
    expect((await admin('GET', `/tenants/${tenant.id}`)).body.fileBytes).toBe(5 * 1024 * 1024);
    const databases = (await admin('GET', '/databases')).body.items;
    expect(databases.find((d: { name: string }) => d.name === 'DB_2').fileBytes).toBeGreaterThanOrEqual(
      5 * 1024 * 1024,
    );
    const before = await r2Keys();
    const over = await uploadFile(key, workspaceId, 'over.bin', bytesOf(4 * 1024 * 1024));
    expectProblem(over, 413, 'payload_too_large');
    expect(await r2Keys()).toEqual(before);
    expect((await admin('GET', `/tenants/${tenant.id}`)).body.fileBytes).toBe(5 * 1024 * 1024);
  });

  it("another tenant's file id answers as a missing one; a deleted tenant's files are removed", async () => {
    const a = await tenantWithFiles();
    const b = await tenantWithFiles('DB_3');
    const file = (await uploadFile(a.key, a.workspaceId, 'a.txt', bytesOf(10))).body;
    const record = (
      await call('POST', '/records/batch', {
        key: a.key,
        body: [{ objectId: a.object.id, fieldValues: [fv('title', 'x'), fv('doc', [heldFile(file)])] }],
      })
    ).body[0].record;
    expect((await getFile(a.key, file.id)).status).toBe(200);
    const theirs = await getFile(b.key, file.id);
    const missing = await getFile(b.key, (b.tenant.id - 1) * TENANT_BLOCK + 999_999);
    expect(theirs.status).toBe(404);
    expect(await theirs.json()).toEqual(await missing.json());
    // Naming it in a write of the other tenant is refused, and stores nothing.
    const taken = await call('POST', '/records/batch', {
      key: b.key,
      body: [{ objectId: b.object.id, fieldValues: [fv('title', 'y'), fv('doc', [heldFile(file)])] }],
    });
    expectProblem(taken, 422, 'unprocessable');
    expect(taken.body.errors).toEqual([
      expect.objectContaining({ pointer: '/0/fieldValues/1/value/0', code: 'invalid_file' }),
    ]);
    expect(record.fieldValues[1]).toEqual(fv('doc', [heldFile(file)]));
    expect((await r2Keys()).filter((k) => k.startsWith(`files/${a.tenant.id}/`))).toHaveLength(1);
    expect((await admin('DELETE', `/tenants/${a.tenant.id}`)).status).toBe(202);
    const until = Date.now() + 20_000;
    while ((await admin('GET', `/tenants/${a.tenant.id}`)).status !== 404) {
      if (Date.now() > until) throw new Error('tenant still there');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await r2Keys()).filter((k) => k.startsWith(`files/${a.tenant.id}/`))).toEqual([]);
    const rows = await env.DB_2.prepare('SELECT count(*) AS n FROM files WHERE id = ?').bind(file.id).first();
    expect(rows).toEqual({ n: 0 });
  });

  it('a moved tenant keeps its files where they are: rows on the new database, bytes served as before', async () => {
    const { tenant, key, workspaceId, object } = await tenantWithFiles('DB_2');
    await mover(tenant.id).hold();
    const file = (await uploadFile(key, workspaceId, 'm.txt', bytesOf(100), 'text/plain')).body;
    const made = await call('POST', '/records/batch', {
      key,
      body: [{ objectId: object.id, fieldValues: [fv('title', 'x'), fv('doc', [heldFile(file)])] }],
    });
    expect(made.status).toBe(201);
    const keysBefore = await r2Keys();
    const started = await admin('POST', `/tenants/${tenant.id}/move`, { database: 'DB_3' });
    expect(started.status).toBe(202);
    expect((await stepMove(tenant.id, started.body.id)).status).toBe('succeeded');
    const row = await database('DB_3').prepare('SELECT record_id FROM files WHERE id = ?').bind(file.id).first();
    expect(row).toEqual({ record_id: made.body[0].record.id });
    expect(await r2Keys()).toEqual(keysBefore);
    const down = await getFile(key, file.id);
    expect(new Uint8Array(await down.arrayBuffer())).toEqual(bytesOf(100));
  });
});
