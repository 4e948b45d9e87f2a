import type { Context } from '../context.ts';
import type { KeyRequest } from '../record-rpc.ts';
import { canonicalJson } from '../core/json.ts';
import type { InputProblem } from '../core/problem.ts';
import { sha256Hex } from '../http/auth.ts';
import type { Settled } from '../core/settle.ts';
import { HttpError, invalidBody } from '../http/errors.ts';
import type { Parsed } from '../schemas/parse.ts';
import type { KeyClaim, KeyDone, StoredAnswer } from '../storage/idempotency.ts';
import { batchAnswer } from '../storage/writes.ts';
import { TURN_TIMEOUT_MS } from '../writing/deadlines.ts';

/**
 * Idempotency-Key, shared by every write. A write checks the caller and the
 * body's shape first, then claims the key: a completed key answers its stored answer again, a
 * key another request is running answers 409, and a key used for another body 422. Otherwise
 * the write runs holding the claim, stores its answer in the same D1 batch as its effect, and
 * gives the claim back if it fails.
 */

const KEY = /^[\x21-\x7e]{1,255}$/;

export type { KeyRequest };

export function keyRequest(request: Request): KeyRequest {
  const key = request.headers.get('Idempotency-Key') ?? undefined;
  const problems: InputProblem[] =
    key === undefined || KEY.test(key)
      ? []
      : [{ header: 'Idempotency-Key', code: 'invalid_format', message: 'expected 1 to 255 visible ASCII characters' }];
  return {
    key: problems.length > 0 ? undefined : key,
    method: request.method,
    path: canonicalPath(new URL(request.url).pathname),
    problems,
  };
}

/**
 * The operation a key is scoped to, in one text whatever way the path was written: ids without
 * leading zeros (`/workspaces/01/records/05` is `/workspaces/1/records/5`), no trailing slash.
 */
export function canonicalPath(pathname: string): string {
  const segments = pathname.split('/').filter((segment, i, all) => !(segment === '' && i === all.length - 1 && i > 0));
  return (
    segments.map((segment) => (/^[0-9]+$/.test(segment) ? segment.replace(/^0+(?=[0-9])/, '') : segment)).join('/') ||
    '/'
  );
}

/**
 * The body's shape and the Idempotency-Key header, checked together once the caller is known:
 * one 400 lists every problem of both. Returns the parsed body.
 */
export function wellShaped<T>(body: Settled<unknown>, parsed: Parsed<T> | undefined, key: KeyRequest): T {
  if (!body.ok) throw body.error;
  if (parsed?.ok !== true || key.problems.length > 0)
    throw invalidBody([...(parsed?.ok === false ? parsed.problems : []), ...key.problems]);
  return parsed.value;
}

/** The outcome of a write: its value, or the answer a completed key replays. */
export type Written<T> = { replay: Response } | { value: T };

/**
 * Claims the key of `request` for `userId` on behalf of write `writeId`; a completed, running or
 * reused key answers instead. The claim's token is the write id, so a re-run of the same write
 * (its coordinator restarted) finds the claim its own and goes on, instead of waiting out the lease.
 */
export async function claimKey(
  context: Context,
  request: KeyRequest,
  userId: number,
  body: unknown,
  writeId: string,
): Promise<{ replay: Response } | { claim: KeyClaim | undefined }> {
  const held = await claimOrDone(context, request, userId, body, writeId);
  if ('done' in held) return { replay: replayOf(await replayed(context, held.done)) };
  return held;
}

/**
 * Claims the key of `request` for `userId` (the admin's scope, or a user's) on behalf of write
 * `writeId`: the claim, or a completed key's stored answer; a key another request is running is
 * 409, a key used for another body 422. No key: no claim.
 */
export async function claimOrDone(
  context: Context,
  request: KeyRequest,
  userId: number,
  body: unknown,
  writeId: string,
): Promise<{ claim: KeyClaim | undefined } | { done: KeyDone }> {
  if (request.key === undefined) return { claim: undefined };
  const claim: KeyClaim = {
    userId,
    method: request.method,
    path: request.path,
    key: request.key,
    fingerprint: await sha256Hex(canonicalJson(body ?? null)),
    token: writeId,
  };
  let holder;
  try {
    holder = await context.idempotency.claim(claim, Date.now());
  } catch (error) {
    // The claim may have been stored with its reply lost: give it back, or the key would answer
    // 409 until its lease ran out.
    await context.idempotency.release(claim).catch(() => undefined);
    throw error;
  }
  if (holder === undefined) return { claim };
  if (holder.fingerprint !== claim.fingerprint) {
    throw new HttpError(422, {
      code: 'unprocessable',
      title: 'Idempotency-Key reused',
      detail: 'This key was used for another request body.',
      errors: [
        {
          header: 'Idempotency-Key',
          code: 'idempotency_key_reused',
          message: 'the key was used for a different request',
        },
      ],
    });
  }
  if (holder.state === 'running') {
    throw new HttpError(409, {
      code: 'conflict',
      title: 'Request in progress',
      detail: 'A request with this Idempotency-Key is still running.',
      headers: { 'Retry-After': '1' },
    });
  }
  return { done: holder.done };
}

export function replayOf(answer: StoredAnswer): Response {
  return new Response(answer.body, {
    status: answer.status,
    headers: { ...answer.headers, 'Idempotent-Replayed': 'true' },
  });
}

/** A completed key's answer: its body as its write's ledger row rebuilds it (or as stored, for old keys). */
async function replayed({ writes }: Context, done: KeyDone): Promise<StoredAnswer> {
  const { status, headers } = done;
  if (done.body !== undefined) return { status, headers, body: done.body };
  const deadline = Date.now() + TURN_TIMEOUT_MS;
  const outcome = (await writes.outcomes([done.writeId ?? ''], deadline)).get(done.writeId ?? '');
  if (outcome === undefined) throw new Error('a completed key names a write the ledger does not hold');
  if ('a' in outcome) return { status, headers, body: outcome.a.body };
  const records = (await writes.answered(outcome, deadline)) ?? [];
  const body =
    done.shape === 'record'
      ? JSON.stringify(records[0])
      : batchAnswer(
          records.map((record) => JSON.stringify(record)),
          'r' in outcome ? outcome.u : undefined,
        );
  return { status, headers, body };
}

/** Runs a write that holds `claim`; if it fails, the claim is given back so a retry runs afresh. */
export async function holding<T>(
  { idempotency }: Context,
  claim: KeyClaim | undefined,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    // Safe even when the write's outcome is unknown: a committed write already turned the claim
    // into its answer, which this leaves alone; a write still in flight stores its answer when
    // it commits if the key is free, and aborts whole if another request took the key meanwhile.
    if (claim !== undefined) await idempotency.release(claim).catch(() => undefined);
    throw error;
  }
}
