import { describe, expect, it } from 'vitest';
import { admin, call, createOne, expectProblem, newObject, newWorkspace, world } from './helpers.ts';

describe('identity and reads', () => {
  it('refuses missing and unknown keys with 401 and WWW-Authenticate', async () => {
    for (const key of [undefined, 'rk_nope']) {
      const res = await call('GET', '/records/1', key === undefined ? {} : { key });
      expectProblem(res, 401, 'unauthorized');
      expect(res.headers.get('WWW-Authenticate')).toBe('Bearer');
    }
  });

  it('shows a record to members of a shared workspace, with its ETag, and 404 to anyone else', async () => {
    const { editor, viewer, stranger, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [{ fieldName: 'firstName', value: 'Ada' }]);
    for (const who of [editor, viewer]) {
      for (const path of [`/records/${record.id}`, `/workspaces/${workspaceId}/records/${record.id}`]) {
        const res = await call('GET', path, { key: who.key });
        expect(res.status).toBe(200);
        expect(res.body).toEqual(record);
        expect(res.headers.get('ETag')).toBe('"1"');
      }
    }
    const hidden = await call('GET', `/records/${record.id}`, { key: stranger.key });
    expectProblem(hidden, 404, 'not_found');
    const missing = await call('GET', '/records/987654', { key: editor.key });
    // Not visible and not existing answer alike.
    expect(missing.body).toEqual(hidden.body);
  });

  it('counts a record under a workspace path only if shared with it and the caller is a member', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [{ fieldName: 'firstName', value: 'Ada' }]);
    const elsewhere = await newWorkspace({ [editor.id]: 'editor' });
    expectProblem(
      await call('GET', `/workspaces/${elsewhere}/records/${record.id}`, { key: editor.key }),
      404,
      'not_found',
    );
    // Shared with the workspace, but the caller is not a member of it.
    const outsider = await newWorkspace();
    const twoWs = await newObject([workspaceId, outsider]);
    const both = await createOne(editor.key, twoWs.id, [{ fieldName: 'firstName', value: 'Bo' }]);
    expect(both.sharedWorkspaceIds).toEqual([workspaceId, outsider].sort((a, b) => a - b));
    expectProblem(
      await call('GET', `/workspaces/${outsider}/records/${both.id}`, { key: editor.key }),
      404,
      'not_found',
    );
    expect((await call('GET', `/workspaces/${workspaceId}/records/${both.id}`, { key: editor.key })).body).toEqual(
      both,
    );
  });

  it('takes a removed membership into account', async () => {
    const { editor, viewer, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [{ fieldName: 'firstName', value: 'Ada' }]);
    expect((await call('GET', `/records/${record.id}`, { key: viewer.key })).status).toBe(200);
    expect((await admin('DELETE', `/admin/workspaces/${workspaceId}/members/${viewer.id}`)).status).toBe(204);
    expectProblem(await call('GET', `/records/${record.id}`, { key: viewer.key }), 404, 'not_found');
  });
});
