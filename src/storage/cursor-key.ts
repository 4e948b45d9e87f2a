import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';

/** 32 random bytes as base64url: the key a service without CURSOR_SECRET signs cursors with. */
export function newCursorKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replaceAll('=', '');
}

/** Read once per isolate and database: the key never changes once made. */
const remembered = new WeakMap<D1Database, Promise<string>>();

/**
 * The cursor key kept in D1, made on first use. One round trip, one transaction: a fresh key is
 * offered with INSERT OR IGNORE and the row that won is read back, so requests racing to make it
 * all sign with the same key. Safe to retry for the same reason.
 */
export function readOrMakeCursorKey(db: D1Database, meter: Meter): Promise<string> {
  return retrying(() =>
    meter.d1(async () => {
      const [, read] = await db.batch<{ secret: string }>([
        db.prepare('INSERT OR IGNORE INTO cursor_key (id, secret) VALUES (1, ?)').bind(newCursorKey()),
        db.prepare('SELECT secret FROM cursor_key WHERE id = 1'),
      ]);
      const secret = read?.results[0]?.secret;
      if (secret === undefined) throw new Error('cursor key missing after insert');
      return secret;
    }),
  );
}

/** readOrMakeCursorKey, asked once per isolate and database. */
export function storedCursorKey(db: D1Database, meter: Meter): Promise<string> {
  let key = remembered.get(db);
  if (key === undefined) {
    key = readOrMakeCursorKey(db, meter);
    // A failed read is not remembered: the next request tries again.
    key.catch(() => remembered.delete(db));
    remembered.set(db, key);
  }
  return key;
}
