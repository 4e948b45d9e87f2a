import type { Env } from './env.ts';
import { CachedReads } from './storage/cached-reads.ts';
import { IdempotencyStore } from './storage/idempotency.ts';
import { isolateCache } from './storage/isolate-cache.ts';
import { KeyStore } from './storage/keys.ts';
import { Lists } from './storage/lists.ts';
import { Meter } from './storage/meter.ts';
import { databaseNamed, defaultRoute } from './tenancy/routes.ts';
import type { TenantRoute } from './domain/tenant.ts';
import { onPrimary, type D1 } from './storage/sessions.ts';
import { Store } from './storage/store.ts';
import { RecordWrites } from './storage/writes.ts';
import { recordTurns, type OwnRecord, type RecordTurns } from './write/record-turns.ts';

/** What every handler, and the write engine wherever it runs, receives beside the request. */
export interface Context {
  env: Env;
  /** The tenant whose records the request reaches, and where it lives. */
  tenant: TenantRoute;
  /** The tenant's database. */
  db: D1Database;
  store: Store;
  /** The ledger and the SQL of record writes. */
  writes: RecordWrites;
  idempotency: IdempotencyStore;
  lists: Lists;
  keys: KeyStore;
  /** The store's reads of callers, definitions and records, through the isolate's memory. */
  cached: CachedReads;
  meter: Meter;
  /** D1 with every statement on the primary: writes, version guards, idempotency look-ups, the admin API. */
  primary: D1;
  /** The request's D1 session for reads (a replica may serve it): lists, queries, the feed. */
  reads: D1;
  /** The turns of the records a write changes. */
  recordTurns: RecordTurns;
  requestId: string;
  waitUntil: (promise: Promise<unknown>) => void;
  /** Who calls the admin API, once checked: the admin token (the default tenant's), or a tenant's administrator. */
  admin?: { userId: number | undefined };
}

/**
 * `reads`: where the request's D1 session starts (a bookmark, `first-unconstrained` or
 * `first-primary`); its reads of callers, records, lists and the feed go through that session,
 * which D1 may serve from a replica. Without it (inside a record object) everything reads the
 * primary. `own`: the record whose object this runs in, whose turns need no call. `tenant`: where
 * the request's records are (the default tenant on DB unless said).
 */
export function createContext(
  env: Env,
  requestId: string,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  reads?: string,
  own?: OwnRecord,
  tenant: TenantRoute = defaultRoute(),
): Context {
  const meter = new Meter();
  const db = databaseNamed(env, tenant.database) ?? env.DB;
  const primary = onPrimary(db, meter);
  const session = reads === undefined ? primary : meter.track(db.withSession(reads));
  const store = new Store(session, meter, tenant.id);
  return {
    env,
    tenant,
    db,
    meter,
    primary,
    reads: session,
    store,
    writes: new RecordWrites(primary, meter),
    idempotency: new IdempotencyStore(primary, meter),
    lists: new Lists(session, meter, tenant.id),
    keys: new KeyStore(primary, meter, tenant.id),
    cached: new CachedReads(store, isolateCache, tenant.id),
    recordTurns: recordTurns(meter, own),
    requestId,
    waitUntil: (p) => ctx.waitUntil(p),
  };
}
