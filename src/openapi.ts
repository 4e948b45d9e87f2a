import { toJsonSchema, toJsonSchemaDefs, type ConversionConfig } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { Operation, Tag } from './routes/operation.ts';
import {
  ApiKeyInfo,
  FieldDefinition,
  Membership,
  MembershipPage,
  Named,
  NewApiKey,
  ObjectDefinition,
  ObjectDefinitionInput,
  ObjectDefinitionPage,
  UserPage,
  WorkspacePage,
} from './schemas/admin.ts';
import { EXAMPLES, problemExample } from './openapi-examples.ts';
import { maxCharsAsJsonSchema } from './schemas/max-chars.ts';
import { Health, InputProblem, Problem } from './schemas/problem.ts';
import { ChangeItem, ChangePage, Me, RecordPage } from './schemas/lists.ts';
import {
  BatchItemSchema,
  CreateItem,
  ExpandedReference,
  FieldValue,
  PatchBody,
  PatchItem,
  ReadRecordSchema,
  RecordSchema,
  Referencing,
  ReferencingPage,
} from './schemas/record.ts';
import { ImportSchema } from './schemas/imports.ts';
import { BOOKMARK_PATTERN } from './http/bookmark.ts';

/**
 * OpenAPI 3.1, generated from the operation table and the same Valibot schemas that validate
 * requests, so the document cannot drift from the code. Each schema named here
 * becomes a component that every other use refers to by `$ref` (a generated client gets a
 * `Record` type, not six anonymous copies).
 */
const COMPONENTS = {
  Record: RecordSchema,
  ReadRecord: ReadRecordSchema,
  ExpandedReference,
  Referencing,
  ReferencingPage,
  Import: ImportSchema,
  FieldValue,
  BatchItem: BatchItemSchema,
  CreateItem,
  PatchBody,
  PatchItem,
  RecordPage,
  ChangeItem,
  ChangePage,
  Me,
  ObjectDefinition,
  ObjectDefinitionInput,
  FieldDefinition,
  Named,
  UserPage,
  WorkspacePage,
  Membership,
  MembershipPage,
  ObjectDefinitionPage,
  NewApiKey,
  ApiKeyInfo,
  Health,
  Problem,
  InputProblem,
} satisfies Record<string, v.GenericSchema>;

const CONVERSION: ConversionConfig = {
  target: 'draft-2020-12',
  errorMode: 'ignore',
  definitions: COMPONENTS,
  overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
  overrideAction: (context) =>
    maxCharsAsJsonSchema(context) as ReturnType<NonNullable<ConversionConfig['overrideAction']>>,
};

const schema = (s: v.GenericSchema): unknown => {
  const { $schema: _dialect, $defs: _inline, ...rest } = toJsonSchema(s, CONVERSION) as Record<string, unknown>;
  return rest;
};

const TAGS: Record<Tag, string> = {
  Records: 'Create, patch, delete, read, list and follow records; needs an API key (`Authorization: Bearer <key>`).',
  Webhooks:
    "Push: each change of a workspace's feed POSTed to a URL, signed as Standard Webhooks, in feed order, at least " +
    "once; for the workspace's editors.",
  Admin:
    "A tenant's users, keys, workspaces, memberships and object definitions; needs the key of one of its " +
    'administrators, or the ADMIN_TOKEN secret for the default tenant.',
  Tenants: "The operator's: tenants and the databases they are on; needs the ADMIN_TOKEN secret.",
  Service: 'Health and this document; no key.',
};

const TITLES: Record<number, string> = {
  400: 'Invalid request (body shape, JSON, path parameter, header)',
  401: 'Missing or unknown credentials',
  403: 'Visible, but the caller may not change it',
  404: 'Not found (or not visible to the caller)',
  405:
    'Method not allowed: a path parameter `.` or `..` (also percent-encoded), which the runtime resolves before the ' +
    'Worker sees the path, made it another route that does not take this method; `Allow` lists those it takes',
  409: 'Conflict: a deleted record, or the same Idempotency-Key still running',
  410: 'Gone: the feed no longer keeps the changes after this cursor',
  412: 'If-Match did not match the current version',
  413: 'Body larger than 1 MiB',
  415: 'Content-Type is not application/json',
  422: 'Valid shape, but not applicable to definitions or records (or an Idempotency-Key reused for another request)',
  426: 'Neither a WebSocket upgrade nor an event stream was asked for',
  429: 'Too many requests for this API key; retry after Retry-After',
  500: 'Internal error',
  503: 'Unavailable; retry after Retry-After when present',
};

/** Statuses an operation can answer, from what it takes. */
export function errorStatuses(op: Operation): number[] {
  const hasParams = op.path.includes(':');
  // 400 for every operation: a malformed X-D1-Bookmark is refused whatever the operation.
  const statuses = new Set<number>([...op.errors, 400, 500, 503]);
  if (op.auth !== 'none') statuses.add(401);
  if (op.auth === 'key') statuses.add(429);
  // The admin API refuses a key that is no administrator's; the operator's, any key.
  if (op.auth === 'admin' || op.auth === 'operator') statuses.add(403);
  if (op.body !== undefined || op.fileBody !== undefined) [400, 413, 415].forEach((s) => statuses.add(s));
  if (hasParams) [400, 404, 405].forEach((s) => statuses.add(s));
  if (op.idempotencyKey === true) [400, 409, 422].forEach((s) => statuses.add(s));
  if (op.query !== undefined) statuses.add(400);
  return [...statuses].sort((a, b) => a - b);
}

const stringHeader = (description: string, extra: Record<string, unknown> = {}) => ({
  description,
  schema: { type: 'string', ...extra },
});

const HEADERS = {
  XRequestId: stringHeader("The caller's X-Request-Id when it sent 1–128 visible ASCII characters, else a new UUID.", {
    pattern: '^[\\x21-\\x7e]{1,128}$',
  }),
  ServerTiming: stringHeader(
    'D1 round trips and Durable Object calls this request made, with their durations, and the rows D1 wrote ' +
      'and read (`rows;desc="N written, M read"`; left out of a 404).',
  ),
  ETag: stringHeader('The record\'s version as a strong entity tag: `"<version>"`.', { pattern: '^"[0-9]+"$' }),
  RetryAfter: stringHeader('Seconds to wait before retrying.', { pattern: '^[0-9]+$' }),
  Allow: stringHeader('The methods the path takes, comma-separated.'),
  WWWAuthenticate: stringHeader('The authentication scheme: `Bearer`.', { const: 'Bearer' }),
  XD1Bookmark: stringHeader(
    'The newest D1 state this answer reflects (a write: its commit), or the bookmark sent when nothing was read. ' +
      'Send it back as `X-D1-Bookmark` to read at least that state.',
    { pattern: BOOKMARK_PATTERN },
  ),
  IdempotentReplayed: stringHeader(
    '`true` when this answer is the stored answer of an earlier request with the same Idempotency-Key.',
    { const: 'true' },
  ),
};
const ref = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });
const COMMON_HEADERS = {
  'X-Request-Id': ref('XRequestId'),
  'Server-Timing': ref('ServerTiming'),
  'X-D1-Bookmark': ref('XD1Bookmark'),
};

function problemHeaders(status: number, op: Operation): Record<string, unknown> {
  const headers: Record<string, unknown> = { ...COMMON_HEADERS };
  if (status === 401) headers['WWW-Authenticate'] = ref('WWWAuthenticate');
  if (status === 405) headers.Allow = ref('Allow');
  if (status === 429 || status === 503 || (status === 409 && op.idempotencyKey === true))
    headers['Retry-After'] = ref('RetryAfter');
  return headers;
}

const IF_MATCH = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description:
    '`*`, or a comma-separated list of strong tags `"<version>"`. No tag equal to the current ' +
    'version (a weak tag never is; an unparsable header matches nothing): 412, nothing written.',
  // Only spaces and tabs may surround the tags (RFC 9110's optional white space).
  schema: {
    type: 'string',
    pattern: '^[ \\t]*(\\*|(W/)?"[\\x21\\x23-\\x7e]*"([ \\t]*,[ \\t]*(W/)?"[\\x21\\x23-\\x7e]*")*)[ \\t]*$',
  },
};
const BOOKMARK = {
  name: 'X-D1-Bookmark',
  in: 'header',
  required: false,
  description:
    'The `X-D1-Bookmark` of an earlier answer: a read then sees at least that state (your own writes included), ' +
    'even when a read replica near you serves it. Without it a read may be served by a replica a little behind. ' +
    'Writes always run on the primary. Not a bookmark: 400.',
  schema: { type: 'string', pattern: BOOKMARK_PATTERN },
};
const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the same key with the same request within 24 hours answers the stored ' +
    'answer again (with `Idempotent-Replayed: true`) and writes nothing; with another request, ' +
    '422 `idempotency_key_reused`; while the first is still running, 409 with Retry-After.',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
};

function operationObject(op: Operation): Record<string, unknown> {
  const parameters: unknown[] = [...op.path.matchAll(/:(\w+)/g)].map((m) => ({
    name: m[1] ?? '',
    in: 'path',
    required: true,
    description: 'An id: digits only (leading zeros allowed).',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  }));
  if (op.ifMatch === true) parameters.push(IF_MATCH);
  if (op.idempotencyKey === true) parameters.push(IDEMPOTENCY_KEY);
  parameters.push(BOOKMARK);
  for (const q of op.query ?? []) parameters.push({ in: 'query', required: false, ...q });
  const okHeaders: Record<string, unknown> = { ...COMMON_HEADERS };
  if (op.ok.etag === true) okHeaders.ETag = ref('ETag');
  if (op.ok.location === true) okHeaders.Location = stringHeader('Where the resource created is read.');
  if (op.idempotencyKey === true) okHeaders['Idempotent-Replayed'] = ref('IdempotentReplayed');
  const examples = EXAMPLES[op.operationId] ?? {};
  const example = (value: unknown) => (value === undefined ? {} : { example: value });
  const okSchema =
    op.ok.schema !== undefined ? schema(op.ok.schema) : op.path === '/openapi.json' ? { type: 'object' } : undefined;
  const files = (types: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(types).map(([type, text]) => [type, { schema: { type: 'string' }, example: text }]),
    );
  const okContent =
    op.fileAnswer !== undefined
      ? { content: files(op.fileAnswer) }
      : okSchema === undefined
        ? {}
        : { content: { 'application/json': { schema: okSchema, ...example(examples.response) } } };
  const responses: Record<string, unknown> = {
    [op.ok.status]: { description: 'Success', headers: okHeaders, ...okContent },
  };
  for (const status of errorStatuses(op)) {
    responses[status] = {
      description: TITLES[status] ?? 'Error',
      headers: problemHeaders(status, op),
      content: {
        'application/problem+json': {
          schema: { $ref: '#/components/schemas/Problem' },
          example: problemExample(status),
        },
      },
    };
  }
  return {
    operationId: op.operationId,
    tags: [op.tag],
    summary: op.summary,
    description: op.description,
    ...(op.auth === 'none'
      ? { security: [] }
      : op.auth === 'admin' || op.auth === 'operator'
        ? { security: [{ adminToken: [] }] }
        : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.fileBody === undefined ? {} : { requestBody: { required: true, content: files(op.fileBody) } }),
    ...(op.body === undefined
      ? {}
      : {
          requestBody: {
            required: op.bodyOptional !== true,
            content: { 'application/json': { schema: schema(op.body), ...example(examples.request) } },
          },
        }),
    responses,
  };
}

export function openApiDocument(operations: readonly Operation[]): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations)
    (paths[op.path.replace(/:(\w+)/g, '{$1}')] ??= {})[op.method.toLowerCase()] = operationObject(op);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Record service',
      version: '1.0.0',
      description:
        'Records of user-defined objects, shared with workspaces. Batches are all or nothing; ' +
        'concurrent patches of a record are ' +
        'applied one at a time, never lost; every error is RFC 9457 problem details with every problem found.',
      contact: { name: 'Record service maintainers' },
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [
      { url: '/', description: 'The deployment serving this document' },
      { url: 'http://localhost:8787', description: 'Local development (npm start)' },
    ],
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ apiKey: [] }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key from POST /admin/users/{userId}/keys' },
        adminToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            "The ADMIN_TOKEN secret (the default tenant's admin API, and the operator's), or an API key of a " +
            "tenant administrator (that tenant's admin API)",
        },
      },
      headers: HEADERS,
      schemas: toJsonSchemaDefs(COMPONENTS, CONVERSION),
    },
    paths,
  };
}

let cached: string | undefined;

export function openApiResponse(operations: readonly Operation[]): Response {
  cached ??= JSON.stringify(openApiDocument(operations));
  return new Response(cached, { headers: { 'Content-Type': 'application/json' } });
}
