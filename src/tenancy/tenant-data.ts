import { idRange } from '../domain/tenant.ts';
import type { Meter } from '../storage/meter.ts';
import { retrying } from '../storage/retry.ts';
import type { D1 } from '../storage/sessions.ts';
import { ofTenant, TENANT_TABLES, type TenantTable } from './tenant-tables.ts';

/**
 * A tenant's rows on a database, found by the block of ids that is its own: what a deleted
 * tenant, or one that moved away, leaves to remove. Tables go children first (D1 keeps foreign
 * keys), its ledger, sequences and feed horizon last.
 */
const TABLES: readonly TenantTable[] = [
  ...TENANT_TABLES.filter((t) => t.kind === 'block').reverse(),
  ...TENANT_TABLES.filter((t) => t.kind !== 'block'),
];

/** Rows removed a statement at most. */
const CHUNK = 1000;

export class TenantData {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
    private readonly tenant: number,
  ) {}

  /** The files and subscriptions of the tenant's imports and webhooks (up to 1,000 each): what lives outside D1. */
  async outside(): Promise<{ files: string[]; importIds: number[]; webhookIds: number[] }> {
    const { lo, hi } = idRange(this.tenant);
    const [imports, webhooks] = await retrying(() =>
      this.meter.d1(() =>
        this.db.batch<unknown>([
          this.db.prepare('SELECT id, file FROM imports WHERE id >= ?1 AND id < ?2 LIMIT 1000').bind(lo, hi),
          this.db.prepare('SELECT id FROM webhooks WHERE id >= ?1 AND id < ?2 LIMIT 1000').bind(lo, hi),
        ]),
      ),
    );
    const importRows = (imports?.results ?? []) as { id: number; file: string }[];
    return {
      files: importRows.map((row) => row.file),
      importIds: importRows.map((row) => row.id),
      webhookIds: ((webhooks?.results ?? []) as { id: number }[]).map((row) => row.id),
    };
  }

  /**
   * Removes up to 1,000 rows of the first table that still holds some of the tenant's, one
   * statement; false once none is left.
   */
  async removeSome(): Promise<boolean> {
    for (const t of TABLES) {
      const { where, values } = ofTenant(t, this.tenant);
      const key = t.key.join(', ');
      const result = await retrying(() =>
        this.meter.d1(() =>
          this.db
            .prepare(
              `DELETE FROM ${t.table} WHERE (${key}) IN (SELECT ${key} FROM ${t.table} WHERE ${where} LIMIT ${CHUNK})`,
            )
            .bind(...values)
            .run(),
        ),
      );
      if (result.meta.changes > 0) return true;
    }
    return false;
  }

  /** The tenant left this database: its keys find no caller here and its writes are refused. */
  async depart(state: 'deleted' | 'moved' | 'switching'): Promise<void> {
    await retrying(() =>
      this.meter.d1(() =>
        this.db
          .prepare(
            `INSERT INTO departures (tenant_id, state) VALUES (?1, ?2)
             ON CONFLICT (tenant_id) DO UPDATE SET state = ?2`,
          )
          .bind(this.tenant, state)
          .run(),
      ),
    );
  }
}
