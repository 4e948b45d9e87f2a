import type { RecordObject } from './record-object.ts';
import type { WebhookObject } from './webhook-object.ts';

export interface Env {
  DB: D1Database;
  RECORDS: DurableObjectNamespace<RecordObject>;
  /** One object per webhook subscription: its deliveries, in feed order. */
  WEBHOOKS: DurableObjectNamespace<WebhookObject>;
  /** Origins a webhook may name over plain http: (comma-separated; local development). */
  WEBHOOK_ALLOW_HTTP?: string;
  /** Test builds only: the first retry's wait and the failing time before disabling, in ms. */
  WEBHOOK_RETRY_BASE_MS?: string;
  WEBHOOK_DISABLE_AFTER_MS?: string;
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
