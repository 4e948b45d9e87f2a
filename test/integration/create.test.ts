import { describe, expect, it } from 'vitest';
import { call, countRows, expectProblem, newObject, newWorkspace, world } from './helpers.ts';

describe('POST /records/batch', () => {
  it('creates every record in request order with the contract defaults', async () => {
    const { editor, workspaceId, object } = await world();
    const otherWs = await newWorkspace({ [editor.id]: 'viewer' });
    const shared = await newObject([otherWs, workspaceId], { nameTemplate: undefined, name: 'Deal' });
    const before = Date.now();
    const res = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        {
          objectId: object.id,
          fieldValues: [
            { fieldName: 'lastName', value: 'Lovelace' },
            { fieldName: 'firstName', value: 'Ada' },
          ],
        },
        { objectId: shared.id, fieldValues: [{ fieldName: 'firstName', value: 'Bob' }], isTemplate: true },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body).toHaveLength(2);
    const [first, second] = res.body.map((item: any) => {
      expect(item.status).toBe('Succeeded');
      return item.record;
    });
    expect(first).toEqual({
      id: expect.any(Number),
      objectId: object.id,
      objectVersion: 1,
      name: 'Ada Lovelace',
      // In the definition's order, not the request's.
      fieldValues: [
        { fieldName: 'firstName', value: 'Ada' },
        { fieldName: 'lastName', value: 'Lovelace' },
      ],
      creationType: 'User',
      version: 1,
      deleted: false,
      sharedWorkspaceIds: [workspaceId],
      ownedBy: editor.id,
      createdAt: first.createdAt,
      createdBy: editor.id,
      updatedAt: first.createdAt,
      updatedBy: editor.id,
      isTemplate: false,
    });
    expect(first.createdAt).toBeGreaterThanOrEqual(before - 1000);
    expect(first.createdAt).toBeLessThanOrEqual(Date.now() + 1000);
    expect(second.id).toBeGreaterThan(first.id);
    expect(second.name).toBe(`Deal #${second.id}`);
    expect(second.isTemplate).toBe(true);
    expect(second.sharedWorkspaceIds).toEqual([workspaceId, otherWs].sort((a, b) => a - b));

    // What was answered is what is stored.
    for (const record of [first, second]) {
      const read = await call('GET', `/records/${record.id}`, { key: editor.key });
      expect(read.body).toEqual(record);
    }
  });

  it('falls back to "<object> #<id>" when the template renders empty, and cuts names at 10000 characters', async () => {
    const { editor, object } = await world();
    const blank = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: '   ' }] }],
    });
    expect(blank.body[0].record.name).toBe(`Contact #${blank.body[0].record.id}`);
    const long = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: '😀'.repeat(10005) }] }],
    });
    expect(long.status).toBe(201);
    expect(Array.from(long.body[0].record.name as string)).toHaveLength(10000);
  });

  it('never reuses an id across batches', async () => {
    const { editor, object } = await world();
    const ids = new Set<number>();
    for (let i = 0; i < 3; i++) {
      const res = await call('POST', '/records/batch', {
        key: editor.key,
        body: Array.from({ length: 20 }, () => ({
          objectId: object.id,
          fieldValues: [{ fieldName: 'firstName', value: 'x' }],
        })),
      });
      for (const item of res.body) ids.add(item.record.id);
    }
    expect(ids.size).toBe(60);
  });

  it('rejects a batch of 0 or 21 elements before looking at items', async () => {
    const { editor, object } = await world();
    const item = { objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'x' }] };
    for (const body of [[], Array.from({ length: 21 }, () => item), { objectId: 1 }]) {
      const before = await countRows('records');
      const res = await call('POST', '/records/batch', { key: editor.key, body });
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.errors[0].pointer).toBe('');
      expect(await countRows('records')).toBe(before);
    }
  });

  it('lists every shape problem of every element with pointers, writing nothing', async () => {
    const { editor, object } = await world();
    const before = await countRows('records');
    const res = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        { fieldValues: [] },
        { objectId: 1.5, fieldValues: [] },
        { objectId: '1', fieldValues: [], feildValues: [] },
        {
          objectId: object.id,
          fieldValues: [
            { fieldName: 'firstName', value: 'a' },
            { fieldName: 'firstName', value: 'b' },
          ],
        },
        { objectId: -1, fieldValues: [{ fieldName: 'firstName' }], isTemplate: 'yes' },
        { objectId: Number.MAX_SAFE_INTEGER + 1, fieldValues: [{ fieldName: '9bad', value: 1, extra: true }] },
      ],
    });
    expectProblem(res, 400, 'invalid_request');
    const found = res.body.errors.map((e: any) => [e.pointer, e.code]);
    expect(found).toEqual(
      expect.arrayContaining([
        ['/0/objectId', 'required'],
        ['/1/objectId', 'invalid_type'],
        ['/2/objectId', 'invalid_type'],
        ['/2/feildValues', 'unknown_property'],
        ['/3/fieldValues/1/fieldName', 'duplicate'],
        ['/4/objectId', 'out_of_range'],
        ['/4/fieldValues/0/value', 'required'],
        ['/4/isTemplate', 'invalid_type'],
        ['/5/objectId', 'out_of_range'],
        ['/5/fieldValues/0/fieldName', 'invalid_format'],
        ['/5/fieldValues/0/extra', 'unknown_property'],
      ]),
    );
    expect(found).toHaveLength(11);
    for (const error of res.body.errors) expect(error.message).not.toContain('feild');
    expect(await countRows('records')).toBe(before);
  });

  it('checks values against the definition: 422 listing every failing element, nothing written', async () => {
    const { editor, viewer, workspaceId, object } = await world();
    const viewOnly = await newObject([await newWorkspace({ [editor.id]: 'viewer' })]);
    const before = await countRows('records');
    const sharesBefore = await countRows('record_workspaces');
    const res = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        { objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'fine' }] },
        {
          objectId: object.id,
          fieldValues: [
            { fieldName: 'nickname', value: 'x' },
            { fieldName: 'firstName', value: 'a' },
          ],
        },
        {
          objectId: object.id,
          fieldValues: [
            { fieldName: 'firstName', value: 1 },
            { fieldName: 'age', value: 1.5 },
          ],
        },
        { objectId: object.id, fieldValues: [{ fieldName: 'lastName', value: 'no first name' }] },
        {
          objectId: object.id,
          fieldValues: [
            { fieldName: 'firstName', value: 'a' },
            { fieldName: 'stage', value: 'prospect' },
            { fieldName: 'tags', value: ['a', 'a'] },
          ],
        },
        { objectId: 999999, fieldValues: [] },
        { objectId: viewOnly.id, fieldValues: [] },
      ],
    });
    expectProblem(res, 422, 'unprocessable');
    expect(res.body.errors.map((e: any) => [e.pointer, e.code])).toEqual([
      ['/1/fieldValues/0/fieldName', 'unknown_field'],
      ['/2/fieldValues/0/value', 'invalid_type'],
      ['/2/fieldValues/1/value', 'invalid_type'],
      ['/3/fieldValues', 'required'],
      ['/4/fieldValues/1/value', 'invalid_value'],
      ['/4/fieldValues/2/value', 'invalid_value'],
      ['/5/objectId', 'unknown_object'],
      ['/6/objectId', 'unknown_object'],
    ]);
    expect(await countRows('records')).toBe(before);
    expect(await countRows('record_workspaces')).toBe(sharesBefore);

    // A viewer of the object's only workspace may not create.
    const asViewer = await call('POST', '/records/batch', {
      key: viewer.key,
      body: [{ objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'x' }] }],
    });
    expectProblem(asViewer, 422, 'unprocessable');
    expect(asViewer.body.errors[0].pointer).toBe('/0/objectId');
    expect(workspaceId).toBeGreaterThan(0);
  });

  it("uses the object's current version for new records", async () => {
    const { editor, workspaceId, object } = await world();
    const put = await call('PUT', `/admin/objects/${object.id}`, {
      key: 'test-admin-token',
      body: { name: 'Person', workspaceIds: [workspaceId], fields: [{ name: 'nick', type: 'text', required: true }] },
    });
    expect(put.body.version).toBe(2);
    const res = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [{ fieldName: 'nick', value: 'n' }] }],
    });
    expect(res.status).toBe(201);
    expect(res.body[0].record.objectVersion).toBe(2);
    expect(res.body[0].record.name).toBe(`Person #${res.body[0].record.id}`);
    const old = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'n' }] }],
    });
    expectProblem(old, 422, 'unprocessable');
  });

  it('treats "value": null as no value on create', async () => {
    const { editor, object } = await world();
    const res = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        {
          objectId: object.id,
          fieldValues: [
            { fieldName: 'firstName', value: 'A' },
            { fieldName: 'age', value: null },
          ],
        },
      ],
    });
    expect(res.body[0].record.fieldValues).toEqual([{ fieldName: 'firstName', value: 'A' }]);
    const required = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: null }] }],
    });
    expectProblem(required, 422, 'unprocessable');
    // Listed once, at its value (not again as a missing required field).
    expect(required.body.errors.map((e: any) => e.pointer)).toEqual(['/0/fieldValues/0/value']);
  });
});
