import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import type { D1 } from './sessions.ts';

/** How long a completed key is replayed: at least 24 hours. */
export const KEY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long a running request holds its key before another may take it over: well past the
 * longest a request runs (10 s for its turn, 10 s more to learn a write's outcome).
 */
export const LEASE_MS = 60_000;

/** A request's hold on its Idempotency-Key; `token` tells this request from any other. */
export interface KeyClaim {
  userId: number;
  method: string;
  path: string;
  key: string;
  /** SHA-256 of the request's canonical JSON body. */
  fingerprint: string;
  token: string;
}

/** What a replay answers: status, the headers that matter, and the body byte for byte. */
export interface StoredAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

/**
 * What a key keeps of a write that answers one record (a patch, delete, restore): its body is
 * rebuilt from the ledger.
 */
export function recordKeyAnswer(version: number): {
  status: number;
  headers: Readonly<Record<string, string>>;
  shape: 'record';
} {
  return { status: 200, headers: { 'Content-Type': 'application/json', ETag: `"${version}"` }, shape: 'record' };
}

/** A completed key: the status and headers it answered, and its body as stored or as its write rebuilds it. */
export interface KeyDone {
  status: number;
  headers: Readonly<Record<string, string>>;
  /** Keys completed before answers were rebuilt from the ledger kept their body. */
  body?: string;
  writeId?: string;
  shape?: 'record' | 'items' | 'answer';
}

/** The key as another request left it: still running, or done with its answer. */
export type KeyHolder =
  { state: 'running'; fingerprint: string } | { state: 'done'; fingerprint: string; done: KeyDone };

interface KeyRow {
  fingerprint: string;
  token: string;
  state: 'running' | 'done';
  status: number | null;
  headers: string | null;
  body: string | null;
  write_id: string | null;
  shape: 'record' | 'items' | 'answer' | null;
}

// Takes the key when it is free, abandoned (lease over, or its write finished without completing
// it: a write that succeeds completes its key in the same transaction as its ledger row, so a
// running key whose token is in the ledger belongs to a write answered as failed) or expired; a
// repeat of our own claim changes nothing, so the claim can be retried after a lost reply.
const CLAIM = `INSERT INTO idempotency_keys (user_id, method, path, key, fingerprint, token, state,
  created_at, lease_until)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8)
  ON CONFLICT (user_id, key, method, path) DO UPDATE SET fingerprint = excluded.fingerprint, token = excluded.token,
    state = 'running', status = NULL, headers = NULL, body = NULL, write_id = NULL, shape = NULL,
    created_at = excluded.created_at, lease_until = excluded.lease_until
  WHERE (idempotency_keys.state = 'running' AND (idempotency_keys.lease_until < excluded.created_at
      OR EXISTS (SELECT 1 FROM writes WHERE writes.id = idempotency_keys.token)))
     OR (idempotency_keys.state = 'done' AND idempotency_keys.created_at <= ?9)`;
const HOLDER = `SELECT fingerprint, token, state, status, headers, body, write_id, shape FROM idempotency_keys
  WHERE user_id = ?1 AND key = ?4 AND method = ?2 AND path = ?3`;

/** SQL of Idempotency-Key; the write that completes a key is in writes.ts. */
export class IdempotencyStore {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
  ) {}

  /** Claims the key for this request: undefined when it holds it now, else who does. One round trip. */
  async claim(claim: KeyClaim, now: number): Promise<KeyHolder | undefined> {
    const params = [
      claim.userId,
      claim.method,
      claim.path,
      claim.key,
      claim.fingerprint,
      claim.token,
      now,
      now + LEASE_MS,
      now - KEY_TTL_MS,
    ];
    const [, holder] = await retrying(() =>
      this.meter.d1(() =>
        this.db.batch<KeyRow>([
          this.db.prepare(CLAIM).bind(...params),
          this.db.prepare(HOLDER).bind(...params.slice(0, 4)),
        ]),
      ),
    );
    const row = holder?.results[0];
    if (row === undefined) throw new Error('idempotency claim left no row');
    if (row.token === claim.token && row.state === 'running') return undefined;
    if (row.state === 'running') return { state: 'running', fingerprint: row.fingerprint };
    const done: KeyDone = {
      status: row.status ?? 200,
      headers: JSON.parse(row.headers ?? '{}') as Record<string, string>,
    };
    if (row.body !== null) done.body = row.body;
    if (row.write_id !== null) done.writeId = row.write_id;
    if (row.shape !== null) done.shape = row.shape;
    return { state: 'done', fingerprint: row.fingerprint, done };
  }

  /**
   * Gives a claim back after the request failed; a completed key stays as it is. Tried harder
   * than a read: a claim that stays behind answers 409 to every retry until its lease ends.
   */
  async release(claim: KeyClaim): Promise<void> {
    await retrying(
      () =>
        this.meter.d1(() =>
          this.db
            .prepare(
              `DELETE FROM idempotency_keys WHERE user_id = ? AND key = ? AND method = ? AND path = ?
                 AND token = ? AND state = 'running'`,
            )
            .bind(claim.userId, claim.key, claim.method, claim.path, claim.token)
            .run(),
        ),
      { attempts: 8 },
    );
  }

  /**
   * Removes answers older than KEY_TTL_MS and abandoned claims, at most 1,000 rows a statement,
   * at most `rounds` statements a run (the next run goes on); returns how many.
   */
  async prune(now: number, rounds = 50): Promise<number> {
    let removed = 0;
    for (let round = 0; round < rounds; round++) {
      const result = await retrying(() =>
        this.meter.d1(() =>
          this.db
            .prepare(
              `DELETE FROM idempotency_keys WHERE (user_id, key, method, path) IN (SELECT user_id, key, method, path
                 FROM idempotency_keys WHERE created_at < ?1 AND (state = 'done' OR lease_until < ?2) LIMIT 1000)`,
            )
            .bind(now - KEY_TTL_MS, now)
            .run(),
        ),
      );
      removed += result.meta.changes;
      if (result.meta.changes < 1000) break;
    }
    return removed;
  }
}
