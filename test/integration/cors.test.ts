import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index.ts';
import { ADMIN_TOKEN, countRows, newUser, newWorkspace, newObject } from './helpers.ts';

const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const APP = 'https://app.example.com';

/** A request to the Worker configured with `CORS_ORIGINS` (undefined: the var is absent). */
async function fetchWith(
  corsOrigins: string | undefined,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
) {
  const { CORS_ORIGINS: _none, ...rest } = env;
  const configured = corsOrigins === undefined ? rest : { ...rest, CORS_ORIGINS: corsOrigins };
  const res = await worker.fetch(
    new Request(`http://records.test${path}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
    configured,
    ctx,
  );
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

const preflight = (origin: string) => ({
  Origin: origin,
  'Access-Control-Request-Method': 'PATCH',
  'Access-Control-Request-Headers': 'authorization, content-type, if-match',
});

describe('CORS from CORS_ORIGINS', () => {
  it("answers a preflight of a listed origin with 204 and the path's methods", async () => {
    const res = await fetchWith(`https://other.example, ${APP}`, 'OPTIONS', '/workspaces/1/records/2', preflight(APP));
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    expect(
      Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary')),
    ).toEqual({
      'access-control-allow-origin': APP,
      'access-control-allow-methods': 'PATCH, DELETE, GET',
      'access-control-allow-headers':
        'Authorization, Content-Type, If-Match, Idempotency-Key, X-Request-Id, X-D1-Bookmark',
      'access-control-max-age': '600',
      'access-control-expose-headers':
        'ETag, X-Request-Id, Server-Timing, Retry-After, Idempotent-Replayed, X-D1-Bookmark',
      vary: 'Origin',
    });
  });

  it('keeps every status of actual requests from a listed origin, and exposes the headers a client reads', async () => {
    const user = await newUser();
    const ws = await newWorkspace({ [user.id]: 'editor' });
    const object = await newObject([ws]);
    const auth = { Origin: APP, Authorization: `Bearer ${user.key}` };
    const created = await fetchWith(APP, 'POST', '/records/batch', auth, [
      { objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'Ada' }] },
    ]);
    expect(created.status).toBe(201);
    expect(created.body[0].record.name).toBe('Ada');
    expect(created.headers.get('Access-Control-Allow-Origin')).toBe(APP);
    expect(created.headers.get('Access-Control-Expose-Headers')).toContain('ETag');
    const id = created.body[0].record.id;
    const stale = await fetchWith(
      APP,
      'PATCH',
      `/workspaces/${ws}/records/${id}`,
      { ...auth, 'If-Match': '"7"' },
      { fieldValues: [] },
    );
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ status: 412, code: 'precondition_failed' });
    expect(stale.headers.get('Access-Control-Allow-Origin')).toBe(APP);
    const missing = await fetchWith(APP, 'GET', '/records/999999', auth);
    expect([missing.status, missing.body.code, missing.headers.get('Access-Control-Allow-Origin')]).toEqual([
      404,
      'not_found',
      APP,
    ]);
    const anonymous = await fetchWith(APP, 'GET', '/records/1', { Origin: APP });
    expect([anonymous.status, anonymous.body.code, anonymous.headers.get('Access-Control-Allow-Origin')]).toEqual([
      401,
      'unauthorized',
      APP,
    ]);
    const read = await fetchWith('*', 'GET', `/records/${id}`, auth);
    expect([read.status, read.headers.get('ETag'), read.headers.get('Access-Control-Allow-Origin')]).toEqual([
      200,
      '"1"',
      '*',
    ]);
    expect(await countRows('records')).toBe(1);
  });

  it('gives an unlisted origin, or every origin without CORS_ORIGINS, no CORS headers at all', async () => {
    for (const setting of [APP, undefined, '']) {
      const pre = await fetchWith(setting, 'OPTIONS', '/records/batch', preflight('https://evil.example'));
      expect(pre.status).toBe(405);
      expect(pre.body.code).toBe('method_not_allowed');
      expect(pre.headers.get('Allow')).toBe('POST, PATCH');
      const health = await fetchWith(setting, 'GET', '/health', { Origin: 'https://evil.example' });
      expect(health.status).toBe(200);
      expect([...health.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
    }
    const noOrigin = await fetchWith(APP, 'GET', '/health');
    expect(noOrigin.headers.get('Access-Control-Allow-Origin')).toBeNull();
  });

  it('a preflight on an unknown path is 404', async () => {
    const res = await fetchWith(APP, 'OPTIONS', '/nowhere', preflight(APP));
    expect([res.status, res.body.code]).toEqual([404, 'not_found']);
  });
});

describe('rate limit per API key', () => {
  it('the configured binding is present', () => {
    expect(typeof env.RATE_LIMITER?.limit).toBe('function');
    expect(env.RATE_LIMIT_PERIOD).toBe('10');
  });

  it(
    'answers 429 with Retry-After past the limit and writes nothing; other keys, admin calls and ' + '/health go on',
    async () => {
      const tight = { ...env, RATE_LIMITER: env.TEST_TIGHT_LIMITER };
      const call = async (key: string, method: string, path: string, body?: unknown) => {
        const res = await worker.fetch(
          new Request(`http://records.test${path}`, {
            method,
            headers: {
              Authorization: `Bearer ${key}`,
              ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
            },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          }),
          tight,
          ctx,
        );
        return { status: res.status, headers: res.headers, body: await res.json<any>().catch(() => undefined) };
      };
      const user = await newUser();
      const other = await newUser();
      const ws = await newWorkspace({ [user.id]: 'editor', [other.id]: 'editor' });
      const object = await newObject([ws]);
      const create = (key: string) =>
        call(key, 'POST', '/records/batch', [
          { objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'A' }] },
        ]);
      const before = await countRows('records');
      const answers = [await create(user.key), await create(user.key), await create(user.key), await create(user.key)];
      expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 429]);
      const limited = answers[3]!;
      expect(limited.body).toEqual({
        type: 'about:blank',
        title: 'Too many requests',
        status: 429,
        code: 'rate_limited',
        detail: 'This API key sent too many requests; retry after 10 s.',
      });
      expect(limited.headers.get('Retry-After')).toBe('10');
      expect(limited.headers.get('Content-Type')).toBe('application/problem+json');
      expect(await countRows('records')).toBe(before + 3);
      expect((await call(user.key, 'GET', '/records/1')).status).toBe(429);
      expect((await create(other.key)).status).toBe(201);
      for (let i = 0; i < 5; i++)
        expect((await call(ADMIN_TOKEN, 'GET', `/admin/objects/${object.id}`)).status).toBe(200);
      for (let i = 0; i < 5; i++) expect((await call(user.key, 'GET', '/health')).status).toBe(200);
      expect(await countRows('records')).toBe(before + 4);
    },
  );

  it('RATE_LIMITS=off turns the limiter off (for the benchmark)', async () => {
    const off = { ...env, RATE_LIMITER: env.TEST_TIGHT_LIMITER, RATE_LIMITS: 'off' };
    const user = await newUser();
    const statuses = [];
    for (let i = 0; i < 5; i++) {
      const res = await worker.fetch(
        new Request('http://records.test/records/999999', { headers: { Authorization: `Bearer ${user.key}` } }),
        off,
        ctx,
      );
      statuses.push(res.status);
    }
    expect(statuses).toEqual([404, 404, 404, 404, 404]);
  });
});
