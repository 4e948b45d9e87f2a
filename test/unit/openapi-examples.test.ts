import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/openapi.ts';
import { operations } from '../../src/routes/table.ts';

const doc = openApiDocument(operations) as any;
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');

/** Validates `value` against a schema of the document; the errors, or [] when it is valid. */
function problems(schema: unknown, value: unknown): string[] {
  const validate = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components', '"doc#/components')));
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

const documented = Object.entries(doc.paths).flatMap(([path, methods]) =>
  Object.entries(methods as Record<string, any>).map(([method, op]) => ({
    where: `${method.toUpperCase()} ${path}`,
    op,
  })),
);

describe('/openapi.json examples', () => {
  it('every operation has a request example when it takes a body, and every response with a body has one', () => {
    expect(documented).toHaveLength(operations.length);
    for (const { where, op } of documented) {
      const request = op.requestBody?.content['application/json'];
      if (request !== undefined) expect(request.example, `${where} request`).toBeDefined();
      for (const [status, response] of Object.entries<any>(op.responses)) {
        for (const [media, content] of Object.entries<any>(response.content ?? {})) {
          expect(content.example, `${where} → ${status} ${media}`).toBeDefined();
        }
      }
      // Every operation shows at least one answer with a body (a 204 shows its problems).
      expect(
        Object.values<any>(op.responses).some((r) => r.content !== undefined),
        where,
      ).toBe(true);
    }
  });

  it('every example validates against its schema', () => {
    const failures: string[] = [];
    for (const { where, op } of documented) {
      const request = op.requestBody?.content['application/json'];
      if (request !== undefined)
        failures.push(...problems(request.schema, request.example).map((p) => `${where} request: ${p}`));
      for (const [status, response] of Object.entries<any>(op.responses)) {
        for (const content of Object.values<any>(response.content ?? {})) {
          failures.push(...problems(content.schema, content.example).map((p) => `${where} → ${status}: ${p}`));
          if (Number(status) >= 300 && content.example?.status !== undefined) {
            expect(content.example.status, `${where} → ${status}`).toBe(Number(status));
          }
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('an example that breaks its schema is caught', () => {
    const create = doc.paths['/records/batch'].post;
    expect(
      problems(create.requestBody.content['application/json'].schema, [{ objectId: 'one', fieldValues: [] }]),
    ).not.toEqual([]);
  });
});
