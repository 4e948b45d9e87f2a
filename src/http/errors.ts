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
  'record_referenced',
  'upgrade_required',
  'range_not_satisfiable',
] as const;

export type ProblemCode = (typeof PROBLEM_CODES)[number];

import type { InputProblem } from '../core/problem.ts';

export type { InputProblem };

/** What an HttpError says beside its status; `title` defaults to the code's own. */
export interface HttpErrorOptions {
  code: ProblemCode;
  title?: string;
  detail?: string | undefined;
  errors?: readonly InputProblem[] | undefined;
  headers?: Readonly<Record<string, string>> | undefined;
  /** The error that led to this one, kept for logs; never shown to the caller. */
  cause?: unknown;
}

/** The title of each code when the thrower gives none. */
const TITLES: Record<ProblemCode, string> = {
  invalid_request: 'Request is invalid',
  unauthorized: 'Authentication required',
  forbidden: 'Forbidden',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  conflict: 'Conflict',
  gone: 'Gone',
  precondition_failed: 'Precondition failed',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  unprocessable: 'Request cannot be applied',
  rate_limited: 'Too many requests',
  internal: 'Internal error',
  unavailable: 'Service unavailable',
  record_deleted: 'Record deleted',
  idempotency_key_reused: 'Idempotency-Key reused',
  record_referenced: 'Record referenced',
  upgrade_required: 'Upgrade required',
  range_not_satisfiable: 'Range not satisfiable',
};

export class HttpError extends Error {
  readonly code: ProblemCode;
  readonly title: string;
  readonly detail: string | undefined;
  readonly errors: readonly InputProblem[] | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(
    readonly status: number,
    { code, title = TITLES[code], detail, errors, headers, cause }: HttpErrorOptions,
  ) {
    super(title, cause === undefined ? undefined : { cause });
    this.name = 'HttpError';
    this.code = code;
    this.title = title;
    this.detail = detail;
    this.errors = errors;
    this.headers = headers;
  }
}

function summary(problems: readonly InputProblem[], where: string): string {
  return `${problems.length} problem${problems.length === 1 ? '' : 's'} in the ${where}`;
}

export const invalidBody = (problems: readonly InputProblem[]): HttpError =>
  new HttpError(400, {
    code: 'invalid_request',
    title: 'Request body is invalid',
    detail: summary(problems, 'request body'),
    errors: problems,
  });

export const invalidQuery = (problems: readonly InputProblem[]): HttpError =>
  new HttpError(400, {
    code: 'invalid_request',
    title: 'Query is invalid',
    detail: summary(problems, 'query'),
    errors: problems,
  });

export const invalidPath = (problems: readonly InputProblem[]): HttpError =>
  new HttpError(400, {
    code: 'invalid_request',
    title: 'Path parameter is invalid',
    detail: summary(problems, 'path'),
    errors: problems,
  });

/** A cursor this service did not issue for this request. */
export const invalidCursor = (problem: InputProblem): HttpError =>
  new HttpError(400, {
    code: 'invalid_request',
    title: 'Invalid cursor',
    detail: 'The cursor was not issued for this request.',
    errors: [problem],
  });

/** An `X-D1-Bookmark` that is not one D1 gave: refused before anything is read or written. */
export const invalidBookmark = (): HttpError =>
  new HttpError(400, {
    code: 'invalid_request',
    title: 'Header is invalid',
    detail: '1 problem in the headers',
    errors: [
      {
        header: 'X-D1-Bookmark',
        code: 'invalid_format',
        message: 'expected a bookmark from an earlier answer’s X-D1-Bookmark header',
      },
    ],
  });

export const unauthorized = (): HttpError =>
  new HttpError(401, {
    code: 'unauthorized',
    title: 'Authentication required',
    detail: 'Send Authorization: Bearer <api key>.',
    headers: {
      'WWW-Authenticate': 'Bearer',
    },
  });

/** A wrong admin token: said as such, so an operator does not go looking for an API key. */
export const adminUnauthorized = (): HttpError =>
  new HttpError(401, {
    code: 'unauthorized',
    title: 'Authentication required',
    detail: 'Send Authorization: Bearer <ADMIN_TOKEN>; the token sent is not the admin token.',
    headers: {
      'WWW-Authenticate': 'Bearer',
    },
  });

export const notFound = (what = 'Resource'): HttpError =>
  new HttpError(404, { code: 'not_found', title: `${what} not found` });

export const forbidden = (detail: string): HttpError =>
  new HttpError(403, { code: 'forbidden', title: 'Forbidden', detail });

/**
 * Problems found while checking a well-shaped body against definitions and stored records.
 * The status is that of the first problem in request order (`status` when there is none: a
 * refusal the ledger kept without its problems).
 */
export function rejected(problems: readonly InputProblem[], status = 422): HttpError {
  if (problems.length === 0 && status === 503) return busy();
  const first = problems[0]?.status ?? status;
  const byStatus: Record<number, [ProblemCode, string]> = {
    403: ['forbidden', 'Forbidden'],
    404: ['not_found', 'Record not found'],
    409: ['conflict', 'Conflict'],
    422: ['unprocessable', 'Request cannot be applied'],
  };
  const [code, title] = byStatus[first] ?? ['unprocessable', 'Request cannot be applied'];
  const own = problems[0]?.code;
  const specific = own === 'record_deleted' || own === 'record_referenced' ? own : code;
  const listed = problems.map((p) => (p.status === first ? withoutStatus(p) : p));
  return new HttpError(first, { code: specific, title, detail: summary(problems, 'request'), errors: listed });
}

function withoutStatus({ status: _status, ...rest }: InputProblem): InputProblem {
  return rest;
}

export const busy = (): HttpError =>
  new HttpError(503, {
    code: 'unavailable',
    title: 'Record busy',
    detail: 'The record could not take this request within 10 seconds; nothing was written.',
    headers: {
      'Retry-After': '1',
    },
  });

/**
 * A write met a database its tenant has left (deleted, or moved on): the database refused it, so
 * nothing was written; sent again, it goes where the tenant is now.
 */
export const tenantElsewhere = (): HttpError =>
  new HttpError(503, {
    code: 'unavailable',
    title: 'Tenant moved',
    detail: "The tenant's database changed as this request ran; nothing was written. Send it again.",
    headers: { 'Retry-After': '1' },
  });

/** Whether D1 refused a statement because the tenant left that database (its departures trigger). */
export const isTenantNotHere = (error: unknown): boolean =>
  error instanceof Error && error.message.includes('tenant_not_here');

const OUTCOME_UNKNOWN = 'Outcome unknown';

/** A write whose outcome storage never confirmed in time: a retry with the same Idempotency-Key tells. */
export const outcomeUnknown = (): HttpError =>
  new HttpError(503, {
    code: 'unavailable',
    title: OUTCOME_UNKNOWN,
    detail: 'Storage did not confirm the write in time. Retry with the same Idempotency-Key to learn its outcome.',
    headers: { 'Retry-After': '1' },
  });

/** Whether a problem (or its parts, as they cross from an object) says the write may have committed. */
export const isOutcomeUnknown = ({ status, title }: { status: number; title: string }): boolean =>
  status === 503 && title === OUTCOME_UNKNOWN;

/** A feed cursor older than what the feed keeps; `where` names the parameter or pointer that sent it. */
export const cursorGone = (where: InputProblem): HttpError =>
  new HttpError(410, {
    code: 'gone',
    title: 'Cursor too old',
    detail: 'Changes after this cursor were pruned (they are kept 7 days). Start again without it.',
    errors: [where],
  });

/** A well-shaped body the service cannot act on (a webhook URL it may not call, say). */
export const unprocessable = (problems: readonly InputProblem[]): HttpError =>
  new HttpError(422, {
    code: 'unprocessable',
    title: 'Request cannot be applied',
    detail: summary(problems, 'request body'),
    errors: problems,
  });
