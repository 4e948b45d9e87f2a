import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index.ts';
import { ADMIN_TOKEN, call, countRows, createOne, expectProblem, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const ctx = {
  waitUntil: () => undefined,
  passThroughOnException: () => undefined,
  props: {},
} as unknown as ExecutionContext;

/** A request whose URL text is handed to the Worker unresolved, as a runtime that does not normalize would. */
async function unresolved(method: string, url: string, key: string) {
  const request = new Request('http://records.test/', { method, headers: { Authorization: `Bearer ${key}` } });
  Object.defineProperty(request, 'url', { value: url });
  const res = await worker.fetch(request, env, ctx);
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe('dot segments never resolve into another route', () => {
  it(
    'in this runtime, the Request constructor resolves %2e%2e before the Worker sees it (a client-side ' +
      'fetch sends /records/ID)',
    async () => {
      const { editor, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
      expect(new Request(`http://records.test/workspaces/%2e%2e/records/${record.id}`).url).toBe(
        `http://records.test/records/${record.id}`,
      );
      expect(new Request('http://records.test/x/%2E%2e/admin/users').url).toBe('http://records.test/admin/users');
      // The admin API reached that way still needs the admin token or an administrator's key.
      const res = await exports.default.fetch('http://records.test/x/%2e%2e/admin/users', {
        method: 'POST',
        headers: { Authorization: `Bearer ${editor.key}`, 'Content-Type': 'application/json' },
        body: '{"name":"x"}',
      });
      expect(res.status).toBe(403);
    },
  );

  it('a URL that reaches the Worker with dot segments is 400, whatever route it would resolve to', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const users = await countRows('users');
    for (const [method, url, key] of [
      ['GET', `http://records.test/workspaces/%2e%2e/records/${record.id}`, editor.key],
      ['GET', `http://records.test/workspaces/${workspaceId}/../../records/${record.id}`, editor.key],
      ['GET', `http://records.test/workspaces/.%2E/records/${record.id}`, editor.key],
      ['POST', 'http://records.test/x/%2e%2e/admin/users', ADMIN_TOKEN],
      ['GET', `http://records.test/x\\..\\records\\${record.id}`, editor.key],
    ] as const) {
      const res = await unresolved(method, url, key);
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.title, url).toBe('Path has dot segments');
      expect(res.headers.get('X-Request-Id')).toBeTruthy();
    }
    expect(await countRows('users')).toBe(users);
    // The same Worker answers the resolved path itself as usual.
    expect((await call('GET', `/records/${record.id}`, { key: editor.key })).status).toBe(200);
  });

  it('a path parameter `.` resolved into a route without the method: 405 with Allow, as documented', async () => {
    const { editor, workspaceId } = await world();
    const before = await countRows('records');
    const path = `/workspaces/${workspaceId}/records/%2e`;
    const answer = await call('PATCH', path, { key: editor.key, body: { fieldValues: [] } });
    expectProblem(answer, 405, 'method_not_allowed');
    expect(answer.headers.get('Allow')).toBe('GET');
    expect(await countRows('records')).toBe(before);
    const document = (await call('GET', '/openapi.json')).body;
    const operation = document.paths['/workspaces/{workspaceId}/records/{recordId}'].patch;
    expect(Object.keys(operation.responses)).toContain('405');
    expect(operation.responses['405'].headers.Allow).toEqual({ $ref: '#/components/headers/Allow' });
  });
});
