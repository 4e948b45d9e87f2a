import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { Operation } from './routes/table.ts';
import { Problem } from './schemas/problem.ts';

/**
 * CONTRACT §10: OpenAPI 3.1, generated from the operation table and the same Valibot schemas
 * that validate requests, so the document cannot drift from the code.
 */

const schema = (s: v.GenericSchema): unknown => {
  const { $schema: _dialect, ...rest } = toJsonSchema(s, { target: 'draft-2020-12', errorMode: 'ignore' }) as Record<string, unknown>;
  return rest;
};

const TITLES: Record<number, string> = {
  400: 'Invalid request (body shape, JSON, path parameter)',
  401: 'Missing or unknown credentials',
  403: 'Visible, but the caller may not change it',
  404: 'Not found (or not visible to the caller)',
  409: 'Conflict: a deleted record, or the same Idempotency-Key still running',
  410: 'Gone: the feed no longer keeps changes after this cursor',
  412: 'If-Match did not match the current version',
  413: 'Body larger than 1 MiB',
  415: 'Content-Type is not application/json',
  422: 'Valid shape, but not applicable to definitions or records (or an Idempotency-Key reused for another body)',
  500: 'Internal error',
  503: 'Unavailable; retry after Retry-After',
};

/** Statuses an operation can answer, from what it takes. */
export function errorStatuses(op: Operation): number[] {
  const hasParams = op.path.includes(':');
  const statuses = new Set<number>([...op.errors, 500, 503]);
  if (op.auth !== 'none') statuses.add(401);
  if (op.idempotencyKey === true) [400, 409, 422].forEach((s) => statuses.add(s));
  if (op.query !== undefined) statuses.add(400);
  if (op.body !== undefined) [400, 413, 415].forEach((s) => statuses.add(s));
  if (hasParams) [400, 404].forEach((s) => statuses.add(s));
  return [...statuses].sort((a, b) => a - b);
}

const header = (description: string) => ({ description, schema: { type: 'string' } });

export function openApiDocument(operations: readonly Operation[]): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    const path = op.path.replace(/:(\w+)/g, '{$1}');
    const parameters: { name: string; in: string; required: boolean; schema: Record<string, string> }[] = [...op.path.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1] ?? '', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9]+$' },
    }));
    const more: Record<string, unknown>[] = [];
    if (op.ifMatch === true) {
      parameters.push({ name: 'If-Match', in: 'header', required: false, schema: { type: 'string', pattern: '.*' } });
    }
    if (op.idempotencyKey === true) {
      more.push({
        name: 'Idempotency-Key', in: 'header', required: false,
        description: 'Makes the write safe to send again: the same key and body within 24 h answer the first answer again.',
        schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
      });
    }
    for (const q of op.query ?? []) more.push({ name: q.name, in: 'query', required: false, description: q.description, schema: q.schema });
    const common = { 'X-Request-Id': header('Echo of the caller\'s id, or a new one'), 'Server-Timing': header('D1 round trips and Durable Object calls') };
    const etag = op.ok.etag === true ? { ETag: header('"<version>" of the record') } : {};
    const replayed = op.idempotencyKey === true ? { 'Idempotent-Replayed': header('`true` when this is the stored answer of an earlier request with the same Idempotency-Key') } : {};
    const okHeaders = { ...common, ...etag, ...replayed };
    const responses: Record<string, unknown> = {
      [op.ok.status]: {
        description: 'Success',
        headers: okHeaders,
        ...(op.ok.schema === undefined
          ? op.path === '/openapi.json' ? { content: { 'application/json': { schema: { type: 'object' } } } } : {}
          : { content: { 'application/json': { schema: schema(op.ok.schema) } } }),
      },
    };
    for (const status of errorStatuses(op)) {
      responses[status] = {
        description: TITLES[status] ?? 'Error',
        headers: common,
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
      };
    }
    paths[path] ??= {};
    paths[path][op.method.toLowerCase()] = {
      summary: op.summary,
      ...(op.auth === 'none' ? { security: [] } : op.auth === 'admin' ? { security: [{ adminToken: [] }] } : {}),
      ...(parameters.length + more.length > 0 ? { parameters: [...parameters, ...more] } : {}),
      ...(op.body === undefined ? {} : { requestBody: { required: op.bodyOptional !== true, content: { 'application/json': { schema: schema(op.body) } } } }),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Record service', version: '1.0.0' },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ apiKey: [] }],
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key from POST /admin/users/{userId}/keys' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'The ADMIN_TOKEN secret' },
      },
      schemas: { Problem: schema(Problem) },
    },
    paths,
  };
}

let cached: string | undefined;

export function openApiResponse(operations: readonly Operation[]): Response {
  cached ??= JSON.stringify(openApiDocument(operations));
  return new Response(cached, { headers: { 'Content-Type': 'application/json' } });
}
