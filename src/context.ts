import type { Env } from './env.ts';
import { recordObjects, type HomeObject, type RecordObjects } from './patching/objects.ts';
import { IdempotencyStore } from './storage/idempotency.ts';
import { isolateCache } from './storage/isolate-cache.ts';
import { KeyStore } from './storage/keys.ts';
import { Lists } from './storage/lists.ts';
import { Meter } from './storage/meter.ts';
import { Recall } from './storage/recall.ts';
import { onPrimary, type D1 } from './storage/sessions.ts';
import { Store } from './storage/store.ts';
import { RecordWrites } from './storage/writes.ts';

/** What every handler receives beside the request. */
export interface Context {
  env: Env;
  store: Store;
  /** Writes of records, exactly once. */
  writes: RecordWrites;
  idempotency: IdempotencyStore;
  lists: Lists;
  keys: KeyStore;
  /** The store's reads of keys, memberships and definitions, through the isolate's memory. */
  recall: Recall;
  meter: Meter;
  /** D1 with every statement on the primary: writes, version guards, idempotency look-ups, the admin API. */
  primary: D1;
  /** The request's D1 session for reads (a replica may serve it): lists, queries, the feed. */
  reads: D1;
  /** The objects of the records a write writes: their patches and turns. */
  recordObjects: RecordObjects;
  requestId: string;
  waitUntil: (promise: Promise<unknown>) => void;
}

/**
 * `reads`: where the request's D1 session starts (a bookmark, `first-unconstrained` or
 * `first-primary`); its reads of callers, records, lists and the feed go through that session,
 * which D1 may serve from a replica. Without it (inside a record object) everything reads the
 * primary.
 */
export function createContext(
  env: Env,
  requestId: string,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  reads?: string,
  /** The record object this runs in, when it runs in one. */
  home?: HomeObject,
): Context {
  const meter = new Meter();
  const primary = onPrimary(env.DB, meter);
  const near = reads === undefined ? primary : meter.track(env.DB.withSession(reads));
  const store = new Store(near, meter);
  return {
    env,
    meter,
    primary,
    reads: near,
    store,
    writes: new RecordWrites(primary, meter),
    idempotency: new IdempotencyStore(primary, meter),
    lists: new Lists(near, meter),
    keys: new KeyStore(primary, meter),
    recall: new Recall(store, isolateCache),
    recordObjects: recordObjects(env, meter, home),
    requestId,
    waitUntil: (p) => ctx.waitUntil(p),
  };
}
