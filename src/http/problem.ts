import { isTransient } from '../storage/retry.ts';
import { HttpError, outcomeUnknown } from './errors.ts';

export const PROBLEM_TYPE = 'application/problem+json';

/** Shapes any thrown value into an RFC 9457 response; unknown errors are logged, never shown. */
export function problemResponse(error: unknown, requestId: string): Response {
  const known = asHttpError(error, requestId);
  const body: Record<string, unknown> = {
    type: 'about:blank',
    title: known.title,
    status: known.status,
    code: known.code,
  };
  if (known.detail !== undefined) body.detail = known.detail;
  if (known.errors !== undefined) body.errors = known.errors;
  return new Response(JSON.stringify(body), {
    status: known.status,
    headers: { 'Content-Type': PROBLEM_TYPE, ...known.headers },
  });
}

/** Any thrown value as the HttpError it is answered with; unknown errors are logged here. */
export function asHttpError(error: unknown, requestId: string): HttpError {
  if (error instanceof HttpError) return error;
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
