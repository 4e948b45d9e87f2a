import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import type { D1 } from './sessions.ts';
import { HOLDER } from './store.ts';

/** The reads of API keys: only a key's hash and prefix are stored (keys are issued and revoked in admin-writes.ts). */

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
    /** The tenant the request was routed to: only its users hold keys here. */
    private readonly tenant: number,
  ) {}

  /**
   * The user behind a key hash and whether they administer the tenant; undefined for a key that
   * is not one, or not of this tenant (whatever rows of another this database still holds).
   */
  async holder(keyHash: string): Promise<{ userId: number; admin: boolean } | undefined> {
    const { results } = await retrying(() =>
      this.meter.d1(() => this.db.prepare(HOLDER(this.tenant)).bind(keyHash).all<{ id: number; admin: number }>()),
    );
    const [row] = results;
    return row === undefined ? undefined : { userId: row.id, admin: row.admin === 1 };
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
}
