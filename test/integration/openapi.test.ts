import { describe, expect, it } from 'vitest';
import { SELF } from 'cloudflare:test';
import { PROBLEM_CODES } from '../../src/http/errors.ts';
import { operations } from '../../src/routes/table.ts';
import { call, createOne, expectProblem, world } from './helpers.ts';

describe('GET /openapi.json', () => {
  it('documents every routed operation with its statuses, without a key', async () => {
    const res = await call('GET', '/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    for (const op of operations) {
      const documented = doc.paths[op.path.replace(/:(\w+)/g, '{$1}')]?.[op.method.toLowerCase()];
      expect(documented, `${op.method} ${op.path}`).toBeDefined();
      expect(Object.keys(documented.responses)).toContain(String(op.ok.status));
      expect(documented).toMatchObject({
        operationId: op.operationId,
        tags: [op.tag],
        summary: op.summary,
        description: op.description,
      });
    }
    expect(new Set(operations.map((op) => op.operationId)).size).toBe(operations.length);
    const create = doc.paths['/records/batch'].post;
    expect(Object.keys(create.responses).sort()).toEqual([
      '201',
      '400',
      '401',
      '409',
      '413',
      '415',
      '422',
      '429',
      '500',
      '503',
    ]);
    // Every write documents Idempotency-Key, and its success answer Idempotent-Replayed.
    expect(create.parameters.find((p: any) => p.name === 'Idempotency-Key')).toMatchObject({
      in: 'header',
      required: false,
    });
    expect(create.responses['201'].headers['Idempotent-Replayed']).toEqual({
      $ref: '#/components/headers/IdempotentReplayed',
    });
    const list = doc.paths['/workspaces/{workspaceId}/records'].get;
    expect(list.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name)).toEqual([
      'limit',
      'cursor',
      'objectId',
      'deleted',
      'updatedAfter',
      'expand',
      'fieldFilters',
    ]);
    // field.<name> parameters: an exploded form object, so each property is a query parameter of its own.
    const fields = list.parameters.find((p: any) => p.name === 'fieldFilters');
    expect(fields).toMatchObject({
      in: 'query',
      style: 'form',
      explode: true,
      schema: { type: 'object', additionalProperties: { type: 'string' } },
    });
    expect(new RegExp(fields.schema.propertyNames.pattern).test('field.stage')).toBe(true);
    expect(new RegExp(fields.schema.propertyNames.pattern).test('stage')).toBe(false);
    // Every status an operation can answer is listed: a DELETE reads a body too (none, or {}).
    const remove = doc.paths['/workspaces/{workspaceId}/records/{recordId}'].delete;
    expect(Object.keys(remove.responses)).toEqual(
      expect.arrayContaining([
        '200',
        '400',
        '401',
        '403',
        '404',
        '409',
        '412',
        '413',
        '415',
        '422',
        '429',
        '500',
        '503',
      ]),
    );
    expect(doc.servers).toContainEqual({ url: 'http://localhost:8787', description: expect.any(String) });
    expect(doc.info.license).toEqual({ name: 'MIT', identifier: 'MIT' });
    expect(Object.keys(doc.paths['/workspaces/{workspaceId}/changes'].get.responses)).toContain('410');
    // Generated from the validating schemas: bounds and strictness show.
    const body = create.requestBody.content['application/json'].schema;
    expect(body).toEqual({
      type: 'array',
      items: { $ref: '#/components/schemas/CreateItem' },
      minItems: 1,
      maxItems: 20,
    });
    const item = doc.components.schemas.CreateItem;
    expect(item).toMatchObject({ additionalProperties: false, required: ['objectId', 'fieldValues'] });
    expect(item.properties.objectId).toEqual({ type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
    expect(item.properties.fieldValues).toEqual({ type: 'array', items: { $ref: '#/components/schemas/FieldValue' } });
    const read = doc.paths['/records/{recordId}'].get;
    expect(read.parameters).toEqual([
      {
        name: 'recordId',
        in: 'path',
        required: true,
        description: expect.any(String),
        schema: { type: 'string', pattern: '^[0-9]+$' },
      },
      {
        name: 'X-D1-Bookmark',
        in: 'header',
        required: false,
        description: expect.stringContaining('replica'),
        schema: { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$' },
      },
      { name: 'expand', in: 'query', required: false, description: expect.any(String), schema: { type: 'string' } },
    ]);
    expect(read.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ReadRecord',
    });
    expect(read.responses['200'].headers.ETag).toEqual({ $ref: '#/components/headers/ETag' });
    expect(read.responses['404'].content['application/problem+json'].schema).toEqual({
      $ref: '#/components/schemas/Problem',
    });
    expect(doc.paths['/health'].get.security).toEqual([]);
  });

  it('names its schemas, closes the set of problem codes and declares every header a client relies on', async () => {
    const doc = (await call('GET', '/openapi.json')).body;
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['Record', 'FieldValue', 'BatchItem', 'ObjectDefinition', 'Problem']),
    );
    expect(doc.components.schemas.BatchItem.properties.record).toEqual({ $ref: '#/components/schemas/Record' });
    expect(doc.components.schemas.Record.required).toContain('isTemplate');
    expect(doc.components.schemas.Problem.properties.code).toEqual({ type: 'string', enum: [...PROBLEM_CODES] });
    // Only Problem's own definition spells out a record or a problem: everything else refers to it
    // (examples aside, which show whole records).
    const text = JSON.stringify(doc.paths, (key, value) => (key === 'example' ? undefined : value));
    expect(text).not.toContain('"creationType"');
    expect(text).not.toContain('"title":{"type":"string"}');
    expect(doc.info.description).toEqual(expect.any(String));
    expect(doc.servers.length).toBeGreaterThan(0);
    expect(doc.tags.map((t: any) => t.name)).toEqual(['Records', 'Webhooks', 'Admin', 'Tenants', 'Service']);

    const patch = doc.paths['/workspaces/{workspaceId}/records/{recordId}'].patch;
    expect(patch.responses['401'].headers['WWW-Authenticate']).toEqual({
      $ref: '#/components/headers/WWWAuthenticate',
    });
    expect(patch.responses['503'].headers['Retry-After']).toEqual({ $ref: '#/components/headers/RetryAfter' });
    expect(patch.responses['429'].headers['Retry-After']).toEqual({ $ref: '#/components/headers/RetryAfter' });
    expect(patch.responses['200'].headers).toEqual({
      'X-Request-Id': { $ref: '#/components/headers/XRequestId' },
      'Server-Timing': { $ref: '#/components/headers/ServerTiming' },
      'X-D1-Bookmark': { $ref: '#/components/headers/XD1Bookmark' },
      ETag: { $ref: '#/components/headers/ETag' },
      'Idempotent-Replayed': { $ref: '#/components/headers/IdempotentReplayed' },
    });
    const ifMatch = patch.parameters.find((p: any) => p.name === 'If-Match');
    const pattern = new RegExp(ifMatch.schema.pattern);
    for (const ok of ['*', '"1"', '"1", "2"', 'W/"3"', ' \t"1"\t,"2" ']) expect(pattern.test(ok), ok).toBe(true);
    // Only spaces and tabs may surround tags.
    for (const bad of ['1', '"1"\n', '\n"1"', '"1",\r\n"2"', '\u00a0"1"'])
      expect(pattern.test(bad), JSON.stringify(bad)).toBe(false);
    const idempotency = patch.parameters.find((p: any) => p.name === 'Idempotency-Key');
    expect(idempotency.schema).toEqual({ type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' });
    expect(patch.responses['409'].headers['Retry-After']).toBeDefined();
    // Every write that takes Idempotency-Key says so; reads do not.
    for (const op of operations) {
      const documented = doc.paths[op.path.replace(/:(\w+)/g, '{$1}')][op.method.toLowerCase()];
      const takesKey = (documented.parameters ?? []).some((p: any) => p.name === 'Idempotency-Key');
      expect(takesKey, op.operationId).toBe(op.idempotencyKey === true);
    }
    // Every write takes one, the admin API's included; a query is a read sent by POST (its filter is a body);
    // a live stream's ticket writes no record (a new one each time, each good once). Files are bytes, not writes
    // of records: a file sent again is another file, which no record takes and which goes 24 h later; a part
    // sent again is refused as out of order.
    const notWrites = [
      'queryRecords',
      'aggregateRecords',
      'createLiveTicket',
      'uploadFile',
      'startUpload',
      'uploadPart',
    ];
    notWrites.push('completeUpload', 'abortUpload');
    expect(operations.filter((op) => op.idempotencyKey).map((op) => op.operationId)).toEqual(
      operations.filter((op) => op.method !== 'GET' && !notWrites.includes(op.operationId)).map((op) => op.operationId),
    );
    expect(operations.filter((op) => op.idempotencyKey).map((op) => op.operationId)).toContain('upsertRecords');
    expect(operations.filter((op) => op.idempotencyKey).length).toBe(30);
  });

  it(
    'lists 413 and 415 for every operation that reads a body, DELETE included, and answers them as ' + 'documented',
    async () => {
      const doc = (await call('GET', '/openapi.json')).body;
      const del = doc.paths['/workspaces/{workspaceId}/records/{recordId}'].delete;
      expect(Object.keys(del.responses)).toEqual(expect.arrayContaining(['400', '413', '415']));
      expect(del.requestBody).toEqual({
        required: false,
        content: {
          'application/json': {
            schema: { type: 'object', properties: {}, required: [], additionalProperties: false },
            example: {},
          },
        },
      });
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [{ fieldName: 'firstName', value: 'A' }]);
      const path = `/workspaces/${workspaceId}/records/${record.id}`;
      const latin1 = await call('DELETE', path, {
        key: editor.key,
        raw: '{}',
        headers: { 'Content-Type': 'application/json; charset=latin1' },
      });
      expectProblem(latin1, 415, 'unsupported_media_type');
      const huge = await call('DELETE', path, { key: editor.key, raw: `{"x":"${'a'.repeat(1024 * 1024)}"}` });
      expectProblem(huge, 413, 'payload_too_large');
      expect((await call('GET', `/records/${record.id}`, { key: editor.key })).body).toMatchObject({
        version: 1,
        deleted: false,
      });
    },
  );
});

describe('GET /docs', () => {
  it('is answered by the Worker without a key: the page, Redoc and its licence, each with its type', async () => {
    const page = await SELF.fetch('https://example.com/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('Content-Type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).toContain('<redoc spec-url="/openapi.json"');
    expect(html).toContain('<script src="/docs/redoc.standalone.js">');
    const script = await SELF.fetch('https://example.com/docs/redoc.standalone.js');
    expect(script.headers.get('Content-Type')).toBe('text/javascript; charset=utf-8');
    const source = await script.text();
    expect(source.startsWith('/*! For license information please see redoc.standalone.js.LICENSE.txt */')).toBe(true);
    expect(source.length).toBeGreaterThan(500_000);
    const licence = await SELF.fetch('https://example.com/docs/redoc.standalone.js.LICENSE.txt');
    expect(licence.status).toBe(200);
    expect(await licence.text()).toMatch(/MIT|Permission is hereby granted/);
    const other = await SELF.fetch('https://example.com/docs/other.js');
    expect([other.status, other.headers.get('Content-Type')]).toEqual([404, 'application/problem+json']);
    await other.body?.cancel();
  });

  it('answers HEAD, 304 to its ETag, 308 from /docs/ and 405 with Allow to other methods', async () => {
    const page = await SELF.fetch('https://example.com/docs');
    const etag = page.headers.get('ETag');
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    await page.body?.cancel();
    const head = await SELF.fetch('https://example.com/docs', { method: 'HEAD' });
    expect([head.status, head.headers.get('ETag'), await head.text()]).toEqual([200, etag, '']);
    const again = await SELF.fetch('https://example.com/docs', { headers: { 'If-None-Match': etag ?? '' } });
    expect([again.status, await again.text()]).toEqual([304, '']);
    const slash = await SELF.fetch('https://example.com/docs/', { redirect: 'manual' });
    expect([slash.status, slash.headers.get('Location')]).toEqual([308, '/docs']);
    for (const method of ['POST', 'DELETE']) {
      const res = await SELF.fetch('https://example.com/docs', { method });
      expect([res.status, res.headers.get('Allow')]).toEqual([405, 'GET, HEAD']);
      expect(((await res.json()) as { code: string }).code).toBe('method_not_allowed');
    }
  });
});
