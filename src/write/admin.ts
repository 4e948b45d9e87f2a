import type { Context } from '../context.ts';
import { newWriteId } from '../core/ledger.ts';
import { isTenantNotHere, type HttpError } from '../http/errors.ts';
import { ADMIN_KEY_SCOPE, AdminWrites, type AdminBatch, type AdminOutcome } from '../storage/admin-writes.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import { claimKey, releaseKey } from './claim.ts';
import { TURN_TIMEOUT_MS } from './deadlines.ts';
import type { IdempotencyKey } from './write.ts';

/**
 * One admin write, exactly once, with its Idempotency-Key. The write has an id and one D1 batch
 * that starts with its ledger row (see storage/admin-writes.ts); its answer is always the one
 * the ledger row holds, so the first answer, an answer after a lost reply and a key's replay
 * are the same bytes. Keys are their caller's own scope: the same key with the same canonical
 * request replays; with another body it is 422 `idempotency_key_reused`; while the first
 * request runs, 409. A failed write stores nothing under its key.
 */

export interface AdminWrite {
  /** The batch of the write `writeId`. */
  batch: (writes: AdminWrites, writeId: string, now: number) => AdminBatch | Promise<AdminBatch>;
  /** The error a failure status answers (404, 409). */
  failure: (status: number, writes: AdminWrites) => Promise<HttpError> | HttpError;
  /**
   * What must follow the commit (the isolate forgetting, an object told); `effects` when this
   * attempt committed it. Not run for a key's replay.
   */
  done?: (effects: D1Result[] | undefined, outcome: { status: number; body: string }) => void | Promise<void>;
  /** Completes the stored body of the answer (an issued key is never stored). */
  reveal?: (body: string, writeId: string) => Promise<string>;
}

/**
 * `scope` is whom the key belongs to: the admin (no user has its id), or the user behind the API
 * key for the writes of users (webhook subscriptions).
 */
export async function adminWrite(
  context: Context,
  key: IdempotencyKey | undefined,
  body: unknown,
  write: AdminWrite,
  scope: number = context.admin?.userId ?? ADMIN_KEY_SCOPE,
): Promise<Response> {
  const writes = new AdminWrites(context.primary, context.meter, context.tenant.id);
  const writeId = newWriteId(context.tenant.id);
  const claim = await claimed(context, writes, key, body, writeId, write, scope);
  if (claim instanceof Response) return claim;
  try {
    const now = Date.now();
    const { outcome, effects } = await writes
      .commit(writeId, await write.batch(writes, writeId, now), claim, now, now + TURN_TIMEOUT_MS)
      .catch(async (error: unknown) => {
        // The tenant left this database as the write ran: a try sent again after a lost reply may
        // have committed before it did, and the ledger here, which nothing changes any more, says.
        const committed = isTenantNotHere(error) ? await writes.outcome(writeId, now + TURN_TIMEOUT_MS) : undefined;
        if (committed === undefined) throw error;
        return { outcome: committed, effects: undefined };
      });
    if ('failed' in outcome) throw await write.failure(outcome.failed, writes);
    await write.done?.(effects, outcome);
    return await answer(outcome, writeId, write, {});
  } catch (error) {
    await releaseKey(context, claim);
    throw error;
  }
}

async function answer(
  outcome: { status: number; body: string },
  writeId: string,
  write: AdminWrite,
  headers: Record<string, string>,
): Promise<Response> {
  if (outcome.status === 204) return new Response(null, { status: 204, headers });
  const body = write.reveal === undefined ? outcome.body : await write.reveal(outcome.body, writeId);
  return new Response(body, { status: outcome.status, headers: { 'Content-Type': 'application/json', ...headers } });
}

/** Claims the key, or answers: the replay of a completed key, 409 while it runs, 422 for another body. */
async function claimed(
  context: Context,
  writes: AdminWrites,
  key: IdempotencyKey | undefined,
  body: unknown,
  writeId: string,
  write: AdminWrite,
  scope: number,
): Promise<KeyClaim | undefined | Response> {
  const result = await claimKey(context, key, scope, body, writeId);
  if ('claim' in result) return result.claim;
  const done = result.done;
  const outcome: AdminOutcome | undefined =
    done.writeId === undefined ? undefined : await writes.outcome(done.writeId, Date.now() + TURN_TIMEOUT_MS);
  if (outcome === undefined || 'failed' in outcome)
    throw new Error('a completed admin key names a write the ledger does not hold');
  return answer(outcome, done.writeId ?? '', write, { ...done.headers, 'Idempotent-Replayed': 'true' });
}
