import { idRange } from '../domain/tenant.ts';
import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import type { D1 } from './sessions.ts';

/**
 * A tenant's rows on its database, found by the block of ids that is its own: what a deleted
 * tenant leaves to remove. Tables are taken children first (D1 keeps foreign keys), each by its
 * key and the column that holds the tenant's ids.
 */
const TABLES: readonly { table: string; key: string; by: string }[] = [
  { table: 'import_errors', key: 'import_id, row', by: 'import_id' },
  { table: 'imports', key: 'id', by: 'id' },
  { table: 'webhooks', key: 'id', by: 'id' },
  { table: 'record_refs', key: 'record_id, field, target_id', by: 'record_id' },
  { table: 'record_referrers', key: 'workspace_id, target_id, object_id, field, record_id', by: 'workspace_id' },
  { table: 'record_index', key: 'record_id, field', by: 'record_id' },
  { table: 'record_sort', key: 'workspace_id, key, value, record_id', by: 'workspace_id' },
  { table: 'name_terms', key: 'workspace_id, term, record_id', by: 'workspace_id' },
  { table: 'record_workspaces', key: 'record_id, workspace_id', by: 'record_id' },
  { table: 'changes', key: 'seq', by: 'seq' },
  { table: 'records', key: 'id', by: 'id' },
  { table: 'memberships', key: 'workspace_id, user_id', by: 'workspace_id' },
  { table: 'api_keys', key: 'id', by: 'id' },
  { table: 'idempotency_keys', key: 'user_id, key, method, path', by: 'user_id' },
  { table: 'users', key: 'id', by: 'id' },
  { table: 'workspaces', key: 'id', by: 'id' },
  { table: 'index_builds', key: 'object_id, field', by: 'object_id' },
  { table: 'reference_targets', key: 'target, object_id, field', by: 'object_id' },
  { table: 'object_versions', key: 'object_id, version', by: 'object_id' },
  { table: 'objects', key: 'id', by: 'id' },
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
   * statement; false once none is left (its ledger, then its sequences and feed horizon go last).
   */
  async removeSome(): Promise<boolean> {
    const { lo, hi } = idRange(this.tenant);
    for (const { table, key, by } of TABLES) {
      const result = await retrying(() =>
        this.meter.d1(() =>
          this.db
            .prepare(
              `DELETE FROM ${table} WHERE (${key}) IN
                 (SELECT ${key} FROM ${table} WHERE ${by} >= ?1 AND ${by} < ?2 LIMIT ${CHUNK})`,
            )
            .bind(lo, hi)
            .run(),
        ),
      );
      if (result.meta.changes > 0) return true;
    }
    // The ledger names a tenant in its write ids (`<time>-t<tenant>-…`), not by a block.
    const mark = `-t${this.tenant}-`;
    const ledger = await retrying(() =>
      this.meter.d1(() =>
        this.db
          .prepare(
            `DELETE FROM writes WHERE id IN
               (SELECT id FROM writes WHERE substr(id, 10, ?1) = ?2 LIMIT ${CHUNK})`,
          )
          .bind(mark.length, mark)
          .run(),
      ),
    );
    if (ledger.meta.changes > 0) return true;
    await retrying(() =>
      this.meter.d1(() =>
        this.db.batch([
          this.db.prepare('DELETE FROM sequences WHERE tenant = ?').bind(this.tenant),
          this.db.prepare('DELETE FROM feed_horizons WHERE tenant = ?').bind(this.tenant),
        ]),
      ),
    );
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
