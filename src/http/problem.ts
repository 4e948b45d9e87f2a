import { isTransient } from '../storage/retry.ts';
import { HttpError, isTenantNotHere, outcomeUnknown, tenantElsewhere } from './errors.ts';

export const PROBLEM_TYPE = 'application/problem+json';

/** A problem+json answer in parts: its status, headers and body text. */
export interface ProblemParts {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Shapes any thrown value into the parts of an RFC 9457 answer; unknown errors are logged, never shown. */
export function problemParts(error: unknown, requestId: string): ProblemParts {
  const known = asHttpError(error, requestId);
  const body: Record<string, unknown> = {
    type: 'about:blank',
    title: known.title,
    status: known.status,
    code: known.code,
  };
  if (known.detail !== undefined) body.detail = known.detail;
  if (known.errors !== undefined) body.errors = known.errors;
  return {
    status: known.status,
    headers: { 'Content-Type': PROBLEM_TYPE, ...known.headers },
    body: JSON.stringify(body),
  };
}

/** Any thrown value as a problem+json response. */
export function problemResponse(error: unknown, requestId: string): Response {
  const { status, headers, body } = problemParts(error, requestId);
  return new Response(body, { status, headers });
}

/** Any thrown value as the HttpError it is answered with; unknown errors are logged here. */
export function asHttpError(error: unknown, requestId: string): HttpError {
  if (error instanceof HttpError) return error;
  if (isTenantNotHere(error)) return tenantElsewhere();
  const retry = unavailableReason(error);
  if (retry) return retry;
  // Named, not imported: storage stands above this module. Its writes say when their outcome is unknown.
  if (error instanceof Error && error.name === 'OutcomeUnknown') return outcomeUnknown();
  console.error(
    JSON.stringify({ requestId, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
  return new HttpError(500, {
    code: 'internal',
    title: 'Internal error',
    detail: `Quote request id ${requestId} when reporting this.`,
  });
}

/**
 * D1 or Durable Object overload, or a transient failure that outlasted its retries, is not our
 * bug: ask the caller to come back. Only reads and idempotent steps are retried, so nothing was
 * written by the step that failed.
 */
function unavailableReason(error: unknown): HttpError | undefined {
  const message = error instanceof Error ? error.message : '';
  const overloaded = (error as { overloaded?: boolean } | null)?.overloaded === true || /overloaded/i.test(message);
  if (!overloaded && !isTransient(error)) return undefined;
  return new HttpError(503, {
    code: 'unavailable',
    title: 'Service unavailable',
    detail: 'Try again shortly.',
    headers: {
      'Retry-After': '1',
    },
  });
}
