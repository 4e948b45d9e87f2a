import type { Context } from '../context.ts';
import { canonicalJson } from '../core/json.ts';
import type { InputProblem } from '../core/problem.ts';
import { sha256Hex } from '../http/auth.ts';
import { HttpError } from '../http/errors.ts';
import type { KeyClaim, KeyDone, StoredAnswer } from '../storage/idempotency.ts';
import type { WriteAnswer, WriteCall } from './write.ts';
import { TURN_TIMEOUT_MS } from './deadlines.ts';
import { itemsText, replayAnswer } from './answer.ts';
import type { IdempotencyKey } from './write.ts';

/**
 * Idempotency-Key, for every write. The Worker reads the header (a malformed one is a shape
 * problem, answered with the body's); the engine claims the key before anything else is decided:
 * a completed key answers its first answer again, a key another request is running answers 409,
 * and a key used for another body 422. Otherwise the write runs holding the claim, completes
 * the key in the same D1 batch as its effect, and gives the claim back if it fails.
 */

const KEY = /^[\x21-\x7e]{1,255}$/;

/** What a request says of its key: the key, or the problem with the header. */
export interface KeyHeader {
  key: IdempotencyKey | undefined;
  problems: InputProblem[];
}

export function keyHeader(request: Request): KeyHeader {
  const key = request.headers.get('Idempotency-Key') ?? undefined;
  if (key === undefined) return { key: undefined, problems: [] };
  if (!KEY.test(key))
    return {
      key: undefined,
      problems: [
        { header: 'Idempotency-Key', code: 'invalid_format', message: 'expected 1 to 255 visible ASCII characters' },
      ],
    };
  return { key: { key, method: request.method, path: canonicalPath(new URL(request.url).pathname) }, problems: [] };
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

export const reused = (): HttpError =>
  new HttpError(422, {
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

const running = (): HttpError =>
  new HttpError(409, {
    code: 'conflict',
    title: 'Request in progress',
    detail: 'A request with this Idempotency-Key is still running.',
    headers: { 'Retry-After': '1' },
  });

/**
 * Claims `key` for `userId` (a user, or the admin's scope) on behalf of write `writeId`: the
 * claim (none without a key), or the completed key. The claim's token is the write id, so a
 * re-run of the same write finds the claim its own and goes on instead of waiting out the lease.
 */
export async function claimKey(
  { idempotency }: Context,
  key: IdempotencyKey | undefined,
  userId: number,
  body: unknown,
  writeId: string,
): Promise<{ claim: KeyClaim | undefined } | { done: KeyDone }> {
  if (key === undefined) return { claim: undefined };
  const claim: KeyClaim = {
    userId,
    ...key,
    fingerprint: await sha256Hex(canonicalJson(body ?? null)),
    token: writeId,
  };
  let holder;
  try {
    holder = await idempotency.claim(claim, Date.now());
  } catch (error) {
    // The claim may have been stored with its reply lost: give it back, or the key would answer
    // 409 until its lease ran out.
    await idempotency.release(claim).catch(() => undefined);
    throw error;
  }
  if (holder === undefined) return { claim };
  if (holder.fingerprint !== claim.fingerprint) throw reused();
  if (holder.state === 'running') throw running();
  return { done: holder.done };
}

/** A completed key's answer: its body as its write's ledger row rebuilds it (or as stored, for old keys). */
export async function storedAnswer({ writes }: Context, done: KeyDone): Promise<StoredAnswer> {
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
      : itemsText(
          records.map((record) => JSON.stringify(record)),
          'r' in outcome ? outcome.u : undefined,
        );
  return { status, headers, body };
}

/**
 * Gives a claim back after its write failed, so a retry with the key runs afresh. Safe even when
 * the write's outcome is unknown: a committed write already turned the claim into its answer,
 * which this leaves alone; a write still in flight stores its answer when it commits if the key
 * is free, and aborts whole if another request took the key meanwhile.
 */
export async function releaseKey({ idempotency }: Context, claim: KeyClaim | undefined): Promise<void> {
  if (claim !== undefined) await idempotency.release(claim).catch(() => undefined);
}

/**
 * Runs `write` holding the write's key for `userId`: a completed key answers its first answer
 * again (409 while another request runs it, 422 for another body); a write that fails gives the
 * claim back, so a retry with the key runs afresh.
 */
export async function withKey(
  context: Context,
  call: WriteCall,
  userId: number,
  body: unknown,
  write: (claim: KeyClaim | undefined) => Promise<WriteAnswer>,
): Promise<WriteAnswer> {
  const claimed = await claimKey(context, call.key, userId, body, call.id);
  if ('done' in claimed) return replayAnswer(await storedAnswer(context, claimed.done), context.meter.work());
  try {
    return await write(claimed.claim);
  } catch (error) {
    await releaseKey(context, claimed.claim);
    throw error;
  }
}
