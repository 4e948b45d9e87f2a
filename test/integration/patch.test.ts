import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call, createOne, expectProblem, newObject, newWorkspace, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

async function stored(id: number): Promise<any> {
  return env.DB.prepare('SELECT version, name, field_values, updated_at, updated_by FROM records WHERE id = ?')
    .bind(id)
    .first();
}

describe('PATCH /workspaces/{workspaceId}/records/{recordId}', () => {
  it('merges by field, removes with null, raises the version by one and re-renders the name', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [
      fv('firstName', 'Ada'),
      fv('lastName', 'Byron'),
      fv('age', 36),
    ]);
    const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('lastName', 'Lovelace'), fv('age', null)] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('ETag')).toBe('"2"');
    expect(res.body).toEqual({
      ...record,
      name: 'Ada Lovelace',
      fieldValues: [fv('firstName', 'Ada'), fv('lastName', 'Lovelace')],
      version: 2,
      updatedAt: res.body.updatedAt,
    });
    expect(res.body.updatedAt).toBeGreaterThanOrEqual(record.updatedAt);
    const read = await call('GET', `/records/${record.id}`, { key: editor.key });
    expect(read.body).toEqual(res.body);
    expect(read.headers.get('ETag')).toBe('"2"');
  });

  it('leaves version and updatedAt alone for a patch that changes nothing', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    for (const body of [
      {},
      { fieldValues: [fv('firstName', 'Ada')] },
      { ownedBy: editor.id },
      { fieldValues: [fv('age', null)] },
    ]) {
      const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, { key: editor.key, body });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(record);
    }
    expect((await stored(record.id)).version).toBe(1);
  });

  it('refuses a changed ownedBy with 422 not_editable, writing nothing', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    for (const ownedBy of [editor.id + 1, null]) {
      const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
        key: editor.key,
        body: { ownedBy, fieldValues: [fv('firstName', 'Eve')] },
      });
      expectProblem(res, 422, 'unprocessable');
      expect(res.body.errors).toEqual([
        { pointer: '/ownedBy', code: 'not_editable', message: 'ownedBy cannot be changed' },
      ]);
    }
    expect((await stored(record.id)).version).toBe(1);
  });

  it('answers 400/422 for bad bodies and values, listing every problem, writing nothing', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const shape = await call('PATCH', path, {
      key: editor.key,
      body: { fieldValues: [fv('age', 1), fv('age', 2)], owner: 1, ownedBy: -1 },
    });
    expectProblem(shape, 400, 'invalid_request');
    expect(shape.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/ownedBy', 'out_of_range'],
      ['/owner', 'unknown_property'],
      ['/fieldValues/1/fieldName', 'duplicate'],
    ]);
    const values = await call('PATCH', path, {
      key: editor.key,
      body: { fieldValues: [fv('nick', 1), fv('age', 'old'), fv('firstName', null)] },
    });
    expectProblem(values, 422, 'unprocessable');
    expect(values.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/fieldValues/0/fieldName', 'unknown_field'],
      ['/fieldValues/1/value', 'invalid_type'],
      ['/fieldValues/2/value', 'required'],
    ]);
    expect((await stored(record.id)).version).toBe(1);
  });

  it('hides records from non-members and other workspaces (404) and refuses viewers (403)', async () => {
    const { editor, viewer, stranger, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    const body = { fieldValues: [fv('lastName', 'X')] };
    const asStranger = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: stranger.key,
      body,
    });
    expectProblem(asStranger, 404, 'not_found');
    const missing = await call('PATCH', `/workspaces/${workspaceId}/records/777777`, { key: stranger.key, body });
    expect(missing.body).toEqual(asStranger.body);
    const other = await newWorkspace({ [editor.id]: 'editor' });
    expectProblem(
      await call('PATCH', `/workspaces/${other}/records/${record.id}`, { key: editor.key, body }),
      404,
      'not_found',
    );
    expectProblem(
      await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, { key: viewer.key, body }),
      403,
      'forbidden',
    );
    // Editor elsewhere, viewer here: the path's workspace decides.
    const both = await newWorkspace({ [viewer.id]: 'editor' });
    const sharedTwice = await newObject([workspaceId, both]);
    const r2 = await createOne(editor.key, sharedTwice.id, [fv('firstName', 'B')]);
    expectProblem(
      await call('PATCH', `/workspaces/${workspaceId}/records/${r2.id}`, { key: viewer.key, body }),
      403,
      'forbidden',
    );
    expect((await call('PATCH', `/workspaces/${both}/records/${r2.id}`, { key: viewer.key, body })).status).toBe(200);
    expect((await stored(record.id)).version).toBe(1);
  });

  it('refuses to patch a deleted record with 409 record_deleted', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    await env.DB.prepare('UPDATE records SET deleted = 1, version = version + 1 WHERE id = ?').bind(record.id).run();
    const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('lastName', 'X')] },
    });
    expectProblem(res, 409, 'record_deleted');
    expect((await stored(record.id)).version).toBe(2);
  });

  it('honours If-Match with strong comparison (412, nothing written)', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const patch = (ifMatch: string, value: string) =>
      call('PATCH', path, {
        key: editor.key,
        headers: { 'If-Match': ifMatch },
        body: { fieldValues: [fv('lastName', value)] },
      });
    for (const tag of ['"2"', 'W/"1"', '1', '"1", "3"x']) {
      const res = await patch(tag, 'no');
      expectProblem(res, 412, 'precondition_failed');
    }
    expect((await stored(record.id)).version).toBe(1);
    expect((await patch('"1"', 'one')).body.version).toBe(2);
    expect((await patch('"7", "2"', 'two')).body.version).toBe(3);
    expect((await patch('*', 'three')).body.version).toBe(4);
    const final = await call('GET', `/records/${record.id}`, { key: editor.key });
    expect(final.body.fieldValues).toEqual([fv('firstName', 'Ada'), fv('lastName', 'three')]);
  });

  it("validates against the current definition but keeps the record's objectVersion", async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    await admin('PUT', `/admin/objects/${object.id}`, {
      name: 'Contact',
      workspaceIds: [workspaceId],
      nameTemplate: '{firstName} ({nick})',
      fields: [
        { name: 'firstName', type: 'text', required: true },
        { name: 'nick', type: 'text' },
      ],
    });
    const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('nick', 'A')] },
    });
    expect(res.body).toMatchObject({ objectVersion: 1, version: 2, name: 'Ada (A)' });
    const old = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('age', 3)] },
    });
    expectProblem(old, 422, 'unprocessable');
  });
});
