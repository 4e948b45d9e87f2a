import { describe, expect, it } from 'vitest';
import { operations } from '../../src/routes/table.ts';
import { call } from './helpers.ts';

describe('GET /openapi.json (CONTRACT §10)', () => {
  it('documents every routed operation with its statuses, without a key', async () => {
    const res = await call('GET', '/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    for (const op of operations) {
      const documented = doc.paths[op.path.replace(/:(\w+)/g, '{$1}')]?.[op.method.toLowerCase()];
      expect(documented, `${op.method} ${op.path}`).toBeDefined();
      expect(Object.keys(documented.responses)).toContain(String(op.ok.status));
    }
    const create = doc.paths['/records/batch'].post;
    expect(Object.keys(create.responses).sort()).toEqual(['201', '400', '401', '409', '413', '415', '422', '500', '503']);
    // Every write documents Idempotency-Key, and its success answer Idempotent-Replayed.
    expect(create.parameters.find((p: any) => p.name === 'Idempotency-Key')).toMatchObject({ in: 'header', required: false });
    expect(create.responses['201'].headers['Idempotent-Replayed']).toBeDefined();
    const list = doc.paths['/workspaces/{workspaceId}/records'].get;
    expect(list.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name)).toEqual(['limit', 'cursor', 'objectId', 'deleted', 'updatedAfter']);
    expect(Object.keys(doc.paths['/workspaces/{workspaceId}/changes'].get.responses)).toContain('410');
    // Generated from the validating schemas: bounds and strictness show.
    const body = create.requestBody.content['application/json'].schema;
    expect(body).toMatchObject({ type: 'array', minItems: 1, maxItems: 20 });
    expect(body.items).toMatchObject({ additionalProperties: false, required: ['objectId', 'fieldValues'] });
    expect(body.items.properties.objectId).toEqual({ type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
    const read = doc.paths['/records/{recordId}'].get;
    expect(read.parameters).toEqual([{ name: 'recordId', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9]+$' } }]);
    expect(read.responses['200'].headers.ETag).toBeDefined();
    expect(read.responses['404'].content['application/problem+json'].schema).toEqual({ $ref: '#/components/schemas/Problem' });
    expect(doc.paths['/health'].get.security).toEqual([]);
  });
});
