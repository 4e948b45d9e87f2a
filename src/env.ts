import type { RecordObjectRpc } from './record-rpc.ts';

export interface Env {
  DB: D1Database;
  RECORDS: DurableObjectNamespace<RecordObjectRpc>;
  /** Secret guarding the admin API; without it the admin API answers 503. */
  ADMIN_TOKEN?: string;
  /** Key of the HMAC that makes list and feed cursors tamper-evident (else a random key kept in D1, table `cursor_key`). */
  CURSOR_SECRET?: string;
  /** Optional `locationHint` for record objects (e.g. "weur"), ideally D1's primary region. */
  RECORD_OBJECT_LOCATION_HINT?: string;
  /** Origins that browsers may call from: comma-separated, or `*`. Absent or empty: no CORS. */
  CORS_ORIGINS?: string;
  /** Requests per API key (`[[ratelimits]]` in wrangler.toml); absent: no limit. */
  RATE_LIMITER?: RateLimit;
  /** The limiter's `period` in seconds, sent as `Retry-After` (the binding does not tell it). */
  RATE_LIMIT_PERIOD?: string;
  /** `off` turns the limiter off (the benchmark drives one key far past any sane limit). */
  RATE_LIMITS?: string;
}
