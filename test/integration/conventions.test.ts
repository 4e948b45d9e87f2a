import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index.ts';
import { call, countRows, expectProblem, world } from './helpers.ts';

describe('conventions of every request', () => {
  it('answers 415 unless the body is application/json (a charset is fine)', async () => {
    const { editor, object } = await world();
    const body = JSON.stringify([{ objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'x' }] }]);
    const before = await countRows('records');
    for (const type of ['text/plain', 'application/jsonx', '']) {
      const res = await call('POST', '/records/batch', {
        key: editor.key,
        raw: body,
        headers: { 'Content-Type': type },
      });
      expectProblem(res, 415, 'unsupported_media_type');
    }
    expect(await countRows('records')).toBe(before);
    const ok = await call('POST', '/records/batch', {
      key: editor.key,
      raw: body,
      headers: { 'Content-Type': 'Application/JSON; charset=utf-8' },
    });
    expect(ok.status).toBe(201);
    expect(ok.body[0].record.fieldValues).toEqual([{ fieldName: 'firstName', value: 'x' }]);
  });

  it('answers 413 past 1 MiB and 400 for malformed JSON, writing nothing', async () => {
    const { editor, object } = await world();
    const before = await countRows('records');
    const huge = JSON.stringify([
      { objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'x'.repeat(1024 * 1024) }] },
    ]);
    expectProblem(await call('POST', '/records/batch', { key: editor.key, raw: huge }), 413, 'payload_too_large');
    const malformed = await call('POST', '/records/batch', { key: editor.key, raw: '[{"objectId": 1,' });
    expectProblem(malformed, 400, 'invalid_request');
    expect(JSON.stringify(malformed.body)).not.toContain('objectId');
    expect(await countRows('records')).toBe(before);
  });

  it('checks the key before the body: 401 wins over 400/415', async () => {
    const res = await call('POST', '/records/batch', {
      key: 'rk_unknown',
      raw: 'not json',
      headers: { 'Content-Type': 'text/plain' },
    });
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers.get('WWW-Authenticate')).toBe('Bearer');
    const none = await call('POST', '/records/batch', { body: [] });
    expectProblem(none, 401, 'unauthorized');
    expect(none.headers.get('WWW-Authenticate')).toBe('Bearer');
  });

  it('validates path ids: digits only, leading zeros allowed, beyond the integer range 404', async () => {
    const { editor, workspaceId, object } = await world();
    const created = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [{ fieldName: 'firstName', value: 'x' }] }],
    });
    const id = created.body[0].record.id;
    const zeros = await call('GET', `/records/000${id}`, { key: editor.key });
    expect(zeros.body.id).toBe(id);
    const bad = await call('GET', '/workspaces/a1/records/-3', { key: editor.key });
    expectProblem(bad, 400, 'invalid_request');
    expect(bad.body.errors).toEqual([
      { parameter: 'workspaceId', code: 'invalid_format', message: 'workspaceId must be digits only' },
      { parameter: 'recordId', code: 'invalid_format', message: 'recordId must be digits only' },
    ]);
    expectProblem(
      await call('GET', `/workspaces/${workspaceId}/records/99999999999999999999`, { key: editor.key }),
      404,
      'not_found',
    );
  });

  it('answers 404 for unknown routes and 405 with Allow for other methods', async () => {
    expectProblem(await call('GET', '/nowhere'), 404, 'not_found');
    const wrong = await call('DELETE', '/records/batch');
    expectProblem(wrong, 405, 'method_not_allowed');
    expect(wrong.headers.get('Allow')).toBe('POST, PATCH');
    expect((await call('PUT', '/records/1')).headers.get('Allow')).toBe('GET');
  });

  it('echoes a sane X-Request-Id and makes one otherwise, on every answer', async () => {
    const echoed = await call('GET', '/health', { headers: { 'X-Request-Id': 'abc-123' } });
    expect(echoed.headers.get('X-Request-Id')).toBe('abc-123');
    const problem = await call('GET', '/nowhere', { headers: { 'X-Request-Id': 'has space' } });
    expect(problem.headers.get('X-Request-Id')).toMatch(/^[0-9a-f-]{36}$/);
    const long = await call('GET', '/health', { headers: { 'X-Request-Id': 'x'.repeat(129) } });
    expect(long.headers.get('X-Request-Id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a generic 500 that shows neither message nor SQL when storage breaks', async () => {
    const db = {
      prepare: () => ({ bind: () => ({}) }),
      batch: () => Promise.reject(new Error('D1_ERROR: no such table: secret_table')),
      withSession: () => ({ ...db, getBookmark: () => null }),
    };
    const broken = { ...env, DB: db } as unknown as typeof env;
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
    const res = await worker.fetch(
      new Request('http://x/records/1', { headers: { Authorization: 'Bearer rk_x', 'X-Request-Id': 'req-500' } }),
      broken,
      ctx,
    );
    expect(res.status).toBe(500);
    const body = await res.json<any>();
    expect(body).toEqual({
      type: 'about:blank',
      title: 'Internal error',
      status: 500,
      code: 'internal',
      detail: 'Quote request id req-500 when reporting this.',
    });
    expect(res.headers.get('Content-Type')).toBe('application/problem+json');
  });
});
