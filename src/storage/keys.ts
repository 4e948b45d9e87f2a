import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import type { D1 } from './sessions.ts';

/** The SQL of API keys: only a key's hash and prefix are stored. Every method is one D1 round trip. */

export interface KeyInfo {
  id: number;
  prefix: string;
  createdAt: number;
}

interface KeyRow {
  id: number;
  prefix: string;
  created_at: number;
}

const toInfo = (row: KeyRow): KeyInfo => ({ id: row.id, prefix: row.prefix, createdAt: row.created_at });

export class KeyStore {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
  ) {}

  /** Stores a key's hash and prefix for an existing user; undefined when the user does not exist. */
  async create(userId: number, keyHash: string, prefix: string, now: number): Promise<KeyInfo | undefined> {
    const statement = this.db
      .prepare(
        `INSERT INTO api_keys (key_hash, prefix, user_id, created_at) SELECT ?1, ?2, id, ?3 FROM users WHERE id = ?4
         RETURNING id, prefix, created_at`,
      )
      .bind(keyHash, prefix, now, userId);
    // Not retried: a lost answer after a commit would issue a second key.
    const rows = await this.meter.d1(async () => (await statement.all<KeyRow>()).results);
    return rows[0] === undefined ? undefined : toInfo(rows[0]);
  }

  /** A user's keys, oldest first; undefined when the user does not exist. */
  async list(userId: number): Promise<KeyInfo[] | undefined> {
    const [users, keys] = await retrying(() =>
      this.meter.d1(() =>
        this.db.batch<unknown>([
          this.db.prepare('SELECT id FROM users WHERE id = ?').bind(userId),
          this.db.prepare('SELECT id, prefix, created_at FROM api_keys WHERE user_id = ? ORDER BY id').bind(userId),
        ]),
      ),
    );
    if (users?.results.length !== 1) return undefined;
    return (keys?.results as KeyRow[]).map(toInfo);
  }

  /** Deletes a key; its hash (to forget it in memory too), or undefined when there was no such key. */
  async revoke(keyId: number): Promise<string | undefined> {
    const statement = this.db.prepare('DELETE FROM api_keys WHERE id = ? RETURNING key_hash').bind(keyId);
    // Not retried: after a lost answer the key is gone and a retry would report no such key.
    const rows = await this.meter.d1(async () => (await statement.all<{ key_hash: string }>()).results);
    return rows[0]?.key_hash;
  }
}
