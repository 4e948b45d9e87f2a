import type { Env } from './env.ts';
import { IdempotencyStore } from './storage/idempotency.ts';
import { isolateCache } from './storage/isolate-cache.ts';
import { KeyStore } from './storage/keys.ts';
import { Lists } from './storage/lists.ts';
import { Meter } from './storage/meter.ts';
import { Recall } from './storage/recall.ts';
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
  requestId: string;
  waitUntil: (promise: Promise<unknown>) => void;
}

export function createContext(env: Env, requestId: string, ctx: Pick<ExecutionContext, 'waitUntil'>): Context {
  const meter = new Meter();
  const store = new Store(env.DB, meter);
  return {
    env,
    meter,
    store,
    writes: new RecordWrites(env.DB, meter),
    idempotency: new IdempotencyStore(env.DB, meter),
    lists: new Lists(env.DB, meter),
    keys: new KeyStore(env.DB, meter),
    recall: new Recall(store, isolateCache),
    requestId,
    waitUntil: (p) => ctx.waitUntil(p),
  };
}
