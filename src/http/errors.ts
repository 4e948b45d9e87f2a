/** The one error vocabulary of the service: thrown anywhere, turned into problem+json in one place. */

/**
 * The closed set of a problem's top-level `code`, documented as an enum in
 * /openapi.json. The generic code of each status, then more specific codes that replace the
 * generic one for their status. (`errors[].code` is a separate, open vocabulary.)
 */
export const PROBLEM_CODES = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'gone',
  'precondition_failed',
  'payload_too_large',
  'unsupported_media_type',
  'unprocessable',
  'rate_limited',
  'internal',
  'unavailable',
  'record_deleted',
  'idempotency_key_reused',
] as const;

export type ProblemCode = (typeof PROBLEM_CODES)[number];

import type { InputProblem } from '../core/problem.ts';

export type { InputProblem };

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: ProblemCode,
    readonly title: string,
    readonly detail?: string,
    readonly errors?: readonly InputProblem[],
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(title);
    this.name = 'HttpError';
  }
}

function summary(problems: readonly InputProblem[], where: string): string {
  return `${problems.length} problem${problems.length === 1 ? '' : 's'} in the ${where}`;
}

export const invalidBody = (problems: readonly InputProblem[]): HttpError =>
  new HttpError(400, 'invalid_request', 'Request body is invalid', summary(problems, 'request body'), problems);

export const invalidQuery = (problems: readonly InputProblem[]): HttpError =>
  new HttpError(400, 'invalid_request', 'Query is invalid', summary(problems, 'query'), problems);

export const invalidPath = (problems: readonly InputProblem[]): HttpError =>
  new HttpError(400, 'invalid_request', 'Path parameter is invalid', summary(problems, 'path'), problems);

/** An `X-D1-Bookmark` that is not one D1 gave: refused before anything is read or written. */
export const invalidBookmark = (): HttpError =>
  new HttpError(400, 'invalid_request', 'Header is invalid', '1 problem in the headers', [
    {
      header: 'X-D1-Bookmark',
      code: 'invalid_format',
      message: 'expected a bookmark from an earlier answer’s X-D1-Bookmark header',
    },
  ]);

export const unauthorized = (): HttpError =>
  new HttpError(401, 'unauthorized', 'Authentication required', 'Send Authorization: Bearer <api key>.', undefined, {
    'WWW-Authenticate': 'Bearer',
  });

/** A wrong admin token: said as such, so an operator does not go looking for an API key. */
export const adminUnauthorized = (): HttpError =>
  new HttpError(
    401,
    'unauthorized',
    'Authentication required',
    'Send Authorization: Bearer <ADMIN_TOKEN>; the token sent is not the admin token.',
    undefined,
    {
      'WWW-Authenticate': 'Bearer',
    },
  );

export const notFound = (what = 'Resource'): HttpError => new HttpError(404, 'not_found', `${what} not found`);

export const forbidden = (detail: string): HttpError => new HttpError(403, 'forbidden', 'Forbidden', detail);

/**
 * Problems found while checking a well-shaped body against definitions and stored records.
 * The status is that of the first problem in request order.
 */
export function rejected(problems: readonly InputProblem[]): HttpError {
  const first = problems[0]?.status ?? 422;
  const byStatus: Record<number, [ProblemCode, string]> = {
    403: ['forbidden', 'Forbidden'],
    404: ['not_found', 'Record not found'],
    409: ['conflict', 'Conflict'],
    422: ['unprocessable', 'Request cannot be applied'],
  };
  const [code, title] = byStatus[first] ?? ['unprocessable', 'Request cannot be applied'];
  const specific = problems[0]?.code === 'record_deleted' ? 'record_deleted' : code;
  const listed = problems.map((p) => (p.status === first ? withoutStatus(p) : p));
  return new HttpError(first, specific, title, summary(problems, 'request'), listed);
}

function withoutStatus({ status: _status, ...rest }: InputProblem): InputProblem {
  return rest;
}

export const busy = (): HttpError =>
  new HttpError(
    503,
    'unavailable',
    'Record busy',
    'The record could not take this request within 10 seconds; nothing was written.',
    undefined,
    {
      'Retry-After': '1',
    },
  );

/** A write whose outcome storage never confirmed in time: a retry with the same Idempotency-Key tells. */
export const outcomeUnknown = (): HttpError =>
  new HttpError(
    503,
    'unavailable',
    'Outcome unknown',
    'Storage did not confirm the write in time. Retry with the same Idempotency-Key to learn its outcome.',
    undefined,
    { 'Retry-After': '1' },
  );
