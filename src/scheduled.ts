import type { Env } from './env.ts';
import { IdempotencyStore, KEY_TTL_MS } from './storage/idempotency.ts';
import { Imports } from './storage/imports.ts';
import { Lists } from './storage/lists.ts';
import { NO_TENANT } from './tenancy/tenant-scope.ts';
import { recordKeys } from './domain/record-keys.ts';
import { Meter } from './storage/meter.ts';
import { Webhooks } from './storage/webhooks.ts';
import { objectsBuilding } from './storage/record-index.ts';
import { startIndexBuild } from './push/index-builds.ts';
import { databaseNamed, databaseNames } from './tenancy/routes.ts';
import { Catalog } from './tenancy/catalog.ts';
import { changeRetention } from './domain/retention.ts';
import { Moves } from './tenancy/moves.ts';
import { Files } from './storage/files.ts';
import { FileUploads } from './storage/file-uploads.ts';
import { fileKey, FREE_FILE_TTL_MS } from './domain/files.ts';
import { tenantOfId } from './domain/tenant.ts';
import { onPrimary } from './storage/sessions.ts';

/** How long a write's ledger row is kept: as long as a key may name it, and an hour more. */
export const LEDGER_TTL_MS = KEY_TTL_MS + 60 * 60 * 1000;

/**
 * The Cron Trigger's work, on every database: each step removes what the contract no longer asks
 * us to keep. Steps are independent; one failing does not stop the others, and the next run
 * catches up.
 */
export async function runScheduled(env: Env, now: number): Promise<void> {
  for (const name of databaseNames(env)) {
    const db = databaseNamed(env, name);
    if (db !== undefined) await runOn(env, db, name, now);
  }
  try {
    console.log(JSON.stringify({ scheduled: 'tenant removals resumed', removed: await resumeRemovals(env) }));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(JSON.stringify({ scheduled: 'tenant removals resumed', error: message }));
  }
  try {
    console.log(JSON.stringify({ scheduled: 'tenant moves resumed', moves: await resumeMoves(env) }));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(JSON.stringify({ scheduled: 'tenant moves resumed', error: message }));
  }
}

/** A move whose object lost its alarm (or never heard of it) goes on; a wake never moves an alarm set. */
async function resumeMoves(env: Env): Promise<number> {
  const meter = new Meter();
  const moves = await new Moves(env.DB, meter).underWay();
  for (const move of moves) await env.TENANTS.getByName(String(move.tenantId)).move(move.id);
  return moves.length;
}

/** A deleted tenant whose removal never started (its start was lost) is removed all the same. */
async function resumeRemovals(env: Env): Promise<number> {
  const meter = new Meter();
  const catalog = new Catalog(env.DB, meter);
  const ids = await catalog.deleting();
  for (const id of ids) {
    const tenant = await catalog.get(id);
    if (tenant !== undefined) await env.TENANTS.getByName(String(id)).remove(id, tenant.database);
  }
  return ids.length;
}

async function runOn(env: Env, db: D1Database, database: string, now: number): Promise<void> {
  const meter = new Meter();
  const steps: [string, () => Promise<number>][] = [
    ['idempotency keys older than 24 h', () => new IdempotencyStore(db, meter).prune(now)],
    // A completed key names its write's ledger row for as long as the key is kept.
    ['ledger rows older than 25 h', () => new Lists(db, meter, NO_TENANT).pruneWrites(now, LEDGER_TTL_MS)],
    ['changes kept past their retention', () => pruneChanges(env, new Lists(db, meter, NO_TENANT), now)],
    // A subscription whose every wake-up was lost (its first one included) has no alarm yet.
    ['webhook subscriptions woken', () => wakeAllWebhooks(env, db, meter)],
    ['keys of records written before', () => new Lists(db, meter, NO_TENANT).fillKeys(recordKeys)],
    // An index build whose start was lost (or whose object lost its alarm) is taken up again.
    ['index builds started', () => startIndexBuilds(env, db)],
    // An import whose start was lost (or whose object lost its alarm) goes on.
    ['imports started', () => startImports(env, db, meter)],
    ['files no record held for 24 h', () => removeFreeFiles(env, db, meter, now)],
    ['uploads in parts left for 24 h', () => giveUpUploads(env, db, meter, now)],
  ];
  for (const [what, step] of steps) {
    try {
      const removed = await step();
      console.log(JSON.stringify({ scheduled: what, database, removed }));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      console.error(JSON.stringify({ scheduled: what, database, error: message }));
    }
  }
}

/** Changes older than CHANGE_RETENTION_DAYS (7 days unless set longer; a setting that is no number says so). */
async function pruneChanges(env: Env, lists: Lists, now: number): Promise<number> {
  const retention = changeRetention(env.CHANGE_RETENTION_DAYS);
  if (!retention.valid) {
    console.error(JSON.stringify({ scheduled: 'CHANGE_RETENTION_DAYS is not a number of days: 7 days are kept' }));
  }
  return lists.pruneChanges(now, retention.ms);
}

async function startImports(env: Env, db: D1Database, meter: Meter): Promise<number> {
  const ids = await new Imports(db, meter).unfinished();
  await Promise.all(ids.map((id) => env.IMPORTS.getByName(String(id)).start(id)));
  return ids.length;
}

async function wakeAllWebhooks(env: Env, db: D1Database, meter: Meter): Promise<number> {
  const ids = await new Webhooks(db, meter).allActive();
  await Promise.all(ids.map((id) => env.WEBHOOKS.getByName(String(id)).wake(id)));
  return ids.length;
}

async function startIndexBuilds(env: Env, db: D1Database): Promise<number> {
  const ids = await objectsBuilding(db);
  await Promise.all(ids.map((id) => startIndexBuild(env, id)));
  return ids.length;
}

/** Files removed a run at most, a chunk of rows (then their bytes) at a time. */
const FREE_FILES_CHUNK = 500;
const FREE_FILES_PER_RUN = 10_000;

/**
 * Files no record has held for 24 h: their rows go first, then their bytes, so no write can take a
 * file whose bytes are gone (bytes a failure leaves behind are only room).
 */
async function removeFreeFiles(env: Env, db: D1Database, meter: Meter, now: number): Promise<number> {
  const files = new Files(onPrimary(db, meter), meter);
  let removed = 0;
  while (removed < FREE_FILES_PER_RUN) {
    const keys = await files.remove(await files.free(now - FREE_FILE_TTL_MS, FREE_FILES_CHUNK));
    if (keys.length > 0) await env.FILES.delete(keys);
    removed += keys.length;
    if (keys.length < FREE_FILES_CHUNK) break;
  }
  return removed;
}

/** Uploads in parts started more than 24 h ago: given up, their parts removed from R2. */
async function giveUpUploads(env: Env, db: D1Database, meter: Meter, now: number): Promise<number> {
  const uploads = new FileUploads(onPrimary(db, meter), meter);
  const stale = await uploads.stale(now - FREE_FILE_TTL_MS, FREE_FILES_CHUNK);
  for (const row of stale) {
    await env.FILES.resumeMultipartUpload(fileKey(tenantOfId(row.id), row.id), row.upload_id)
      .abort()
      .catch(() => undefined);
    await uploads.remove(row.id);
  }
  return stale.length;
}
