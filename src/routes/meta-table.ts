import { openApiResponse } from '../openapi.ts';
import { Health } from '../schemas/problem.ts';
import { health } from './meta.ts';
import type { Operation } from './operation.ts';

/** The service's own operations: its health, and the OpenAPI document of every operation. */
export const metaOperations = {
  getHealth: {
    method: 'GET',
    path: '/health',
    handler: health,
    operationId: 'getHealth',
    tag: 'Service',
    summary: 'Health: 200 when D1 answers',
    description: 'Needs no key; 503 when D1 does not answer.',
    auth: 'none',
    ok: { status: 200, schema: Health },
    errors: [],
  },
} satisfies Record<string, Operation>;

/**
 * GET /openapi.json: the document of `table()`, every operation of the service (asked for when the
 * document is first served, once the table that holds this operation is joined).
 */
export function openApiOperation(table: () => readonly Operation[]): Operation {
  return {
    method: 'GET',
    path: '/openapi.json',
    handler: () => openApiResponse(table()),
    operationId: 'getOpenApi',
    tag: 'Service',
    summary: 'This document',
    description:
      'The OpenAPI 3.1 document of every operation, generated from the schemas that validate requests. Needs no key.',
    auth: 'none',
    ok: { status: 200 },
    errors: [],
  };
}
