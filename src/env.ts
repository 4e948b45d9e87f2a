import type { RecordObject } from './record-object.ts';

export interface Env {
  DB: D1Database;
  RECORDS: DurableObjectNamespace<RecordObject>;
  /** Secret guarding the admin API; without it the admin API answers 503. */
  ADMIN_TOKEN?: string;
  /** Key of the HMAC that makes list and feed cursors tamper-evident (else ADMIN_TOKEN is used). */
  CURSOR_SECRET?: string;
  /** Optional `locationHint` for record objects (e.g. "weur"), ideally D1's primary region. */
  RECORD_OBJECT_LOCATION_HINT?: string;
}
