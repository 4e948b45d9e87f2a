import { describe, expect, it } from 'vitest';
import { admin, call, expectProblem, fv, world } from './helpers.ts';

/** A body's problems are all listed, each once. */

const found = (errors: { pointer: string; code: string }[]): [string, string][] =>
  errors.map((e) => [e.pointer, e.code]);

describe('every problem of a body, each once', () => {
  it('every unknown property of an object is listed, not only the first', async () => {
    const { editor, workspaceId, object } = await world();
    const created = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        { objectId: object.id, fieldValues: [fv('firstName', 'Ada')], colour: 'red', size: 2 },
        { objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'Al', unit: 'm', scale: 2 }] },
      ],
    });
    expectProblem(created, 400, 'invalid_request');
    expect(found(created.body.errors)).toEqual([
      ['/0/colour', 'unknown_property'],
      ['/0/size', 'unknown_property'],
      ['/1/fieldValues/0/unit', 'unknown_property'],
      ['/1/fieldValues/0/scale', 'unknown_property'],
    ]);
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/1`, {
      key: editor.key,
      body: { feildValues: [], owner: 1 },
    });
    expect(found(patched.body.errors)).toEqual([
      ['/feildValues', 'unknown_property'],
      ['/owner', 'unknown_property'],
    ]);
    const defined = await admin('POST', '/admin/objects', {
      name: 'Flight',
      workspaceIds: [workspaceId],
      fields: [{ name: 'delay', type: 'integer', index: true, uniq: true }],
      colour: 'red',
    });
    expect(found(defined.body.errors)).toEqual([
      ['/fields/0/index', 'unknown_property'],
      ['/fields/0/uniq', 'unknown_property'],
      ['/colour', 'unknown_property'],
    ]);
  });

  it('a required field sent as null in a create is listed once, at its value', async () => {
    const { editor, object } = await world();
    const created = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        { objectId: object.id, fieldValues: [fv('lastName', 'Lovelace'), fv('firstName', null)] },
        { objectId: object.id, fieldValues: [fv('lastName', 'Turing')] },
      ],
    });
    expectProblem(created, 422, 'unprocessable');
    expect(found(created.body.errors)).toEqual([
      ['/0/fieldValues/1/value', 'required'],
      ['/1/fieldValues', 'required'],
    ]);
  });

  it('in an upsert that creates, too', async () => {
    const { editor, workspaceId } = await world();
    const defined = await admin('POST', '/admin/objects', {
      name: 'Person',
      workspaceIds: [workspaceId],
      fields: [
        { name: 'email', type: 'email', unique: true },
        { name: 'first', type: 'text', required: true },
      ],
    });
    const upserted = await call('POST', `/objects/${defined.body.id}/records/upsert`, {
      key: editor.key,
      body: { matchOn: 'email', items: [{ fieldValues: [fv('email', 'ada@example.com'), fv('first', null)] }] },
    });
    expectProblem(upserted, 422, 'unprocessable');
    expect(found(upserted.body.errors)).toEqual([['/items/0/fieldValues/1/value', 'required']]);
  });
});
