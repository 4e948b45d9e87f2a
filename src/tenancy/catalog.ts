import { DEFAULT_TENANT, type TenantStatus } from '../domain/tenant.ts';
import type { Meter } from '../storage/meter.ts';
import { retrying } from '../storage/retry.ts';
import type { D1 } from '../storage/sessions.ts';

/**
 * The catalog of tenants, in DB: each tenant's name, database and state. The default tenant has no
 * row until something of it changes (it is on DB); it is listed all the same.
 */

export interface TenantRow {
  id: number;
  name: string;
  database: string;
  status: TenantStatus | 'deleted';
  createdAt: number;
}

const COLUMNS = 'id, name, database, status, created_at AS createdAt';
export const DEFAULT_TENANT_ROW: TenantRow = {
  id: DEFAULT_TENANT,
  name: 'default',
  database: 'DB',
  status: 'active',
  createdAt: 0,
};

export class Catalog {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
  ) {}

  private all<T>(statement: D1PreparedStatement): Promise<T[]> {
    return retrying(() => this.meter.d1(async () => (await statement.all<T>()).results));
  }

  /** A tenant that is not deleted; the default tenant even without a row. */
  async get(id: number): Promise<TenantRow | undefined> {
    const [row] = await this.all<TenantRow>(
      this.db.prepare(`SELECT ${COLUMNS} FROM tenants WHERE id = ? AND status <> 'deleted'`).bind(id),
    );
    return row ?? (id === DEFAULT_TENANT ? DEFAULT_TENANT_ROW : undefined);
  }

  /** Tenants with an id above `after`, ascending, at most `limit`, deleted ones left out. */
  async list(after: number, limit: number): Promise<TenantRow[]> {
    const rows = await this.all<TenantRow>(
      this.db
        .prepare(`SELECT ${COLUMNS} FROM tenants WHERE id > ? AND status <> 'deleted' ORDER BY id LIMIT ?`)
        .bind(after, limit),
    );
    if (after >= DEFAULT_TENANT || rows.some((row) => row.id === DEFAULT_TENANT)) return rows;
    return [DEFAULT_TENANT_ROW, ...rows].slice(0, limit);
  }

  /** How many tenants that are not deleted live on each database. */
  async counts(): Promise<Map<string, number>> {
    const rows = await this.all<{ database: string; n: number; has_default: number }>(
      this.db.prepare(
        `SELECT database, count(*) AS n, max(id = ${DEFAULT_TENANT}) AS has_default FROM tenants
         WHERE status <> 'deleted' GROUP BY database`,
      ),
    );
    const counts = new Map(rows.map((row) => [row.database, row.n]));
    // The default tenant without a row of its own is on DB.
    if (!rows.some((row) => row.has_default === 1)) counts.set('DB', (counts.get('DB') ?? 0) + 1);
    return counts;
  }

  /**
   * A new tenant's row in a write's batch: the next id (2 and up; the default tenant is 1), active
   * on `database`. `?1` is read back by `insertedId`.
   */
  insert(name: string, database: string, now: number): D1PreparedStatement {
    return this.db
      .prepare(
        `INSERT INTO tenants (id, name, database, status, created_at)
         SELECT max(${DEFAULT_TENANT} + 1, coalesce(max(id), 0) + 1), ?, ?, 'active', ? FROM tenants`,
      )
      .bind(name, database, now);
  }

  /** Marks a tenant deleting (the row stays until its data is gone); 0 changes when it is not active. */
  markDeleting(id: number): D1PreparedStatement {
    return this.db
      .prepare("UPDATE tenants SET status = 'deleting' WHERE id = ? AND status IN ('active', 'moving')")
      .bind(id);
  }

  /** Its data gone: deleted for good (its id is never given again). */
  async markDeleted(id: number): Promise<void> {
    await retrying(() =>
      this.meter.d1(() => this.db.prepare("UPDATE tenants SET status = 'deleted' WHERE id = ?").bind(id).run()),
    );
  }

  /** Tenants being deleted, whose removal may need starting again. */
  async deleting(): Promise<number[]> {
    const rows = await this.all<{ id: number }>(
      this.db.prepare("SELECT id FROM tenants WHERE status = 'deleting' ORDER BY id LIMIT 1000"),
    );
    return rows.map((row) => row.id);
  }
}
