import type { Meter } from '../storage/meter.ts';
import { retrying } from '../storage/retry.ts';
import type { D1 } from '../storage/sessions.ts';

/**
 * Moves of tenants between databases, in DB's catalog beside the tenants: what the operator reads
 * (`GET /tenants/{id}/moves/{moveId}`) and where the mover stands (`step`), so a restart resumes.
 */

export type MoveStatus = 'copying' | 'switching' | 'succeeded' | 'failed' | 'cancelled';

export interface MoveRow {
  id: number;
  tenantId: number;
  from: string;
  to: string;
  status: MoveStatus;
  rowsCopied: number;
  startedAt: number;
  finishedAt: number | null;
  failure: string | null;
  step: string;
}

const COLUMNS = `id, tenant_id AS tenantId, from_db AS "from", to_db AS "to", status, rows_copied AS rowsCopied,
  started_at AS startedAt, finished_at AS finishedAt, failure, step`;

export class Moves {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
  ) {}

  private run<T>(call: () => Promise<T>): Promise<T> {
    return retrying(() => this.meter.d1(call));
  }

  /**
   * A move of an active tenant from `from`, and the tenant marked moving, in one batch; undefined
   * when the tenant is not active on `from` any more. A second move of a tenant under way fails
   * on the one-at-a-time index (a constraint error, never retried).
   */
  async start(
    tenantId: number,
    from: string,
    to: string,
    now: number,
    step: string,
    key: string | null,
  ): Promise<number | undefined> {
    const [, inserted] = await this.run(() =>
      this.db.batch<{ id: number }>([
        this.db
          .prepare("UPDATE tenants SET status = 'moving' WHERE id = ? AND database = ? AND status = 'active'")
          .bind(tenantId, from),
        this.db
          .prepare(
            `INSERT INTO moves (tenant_id, from_db, to_db, status, started_at, step, idempotency_key)
             SELECT ?1, ?2, ?3, 'copying', ?4, ?5, ?6
             WHERE EXISTS (SELECT 1 FROM tenants WHERE id = ?1 AND database = ?2 AND status = 'moving')
             RETURNING id`,
          )
          .bind(tenantId, from, to, now, step, key),
      ]),
    );
    return inserted?.results[0]?.id;
  }

  async get(id: number): Promise<MoveRow | undefined> {
    const { results } = await this.run(() =>
      this.db.prepare(`SELECT ${COLUMNS} FROM moves WHERE id = ?`).bind(id).all<MoveRow>(),
    );
    return results[0];
  }

  /** The move of a tenant started with the Idempotency-Key `key`, if any. */
  async keyed(tenantId: number, key: string): Promise<MoveRow | undefined> {
    const { results } = await this.run(() =>
      this.db
        .prepare(`SELECT ${COLUMNS} FROM moves WHERE tenant_id = ? AND idempotency_key = ?`)
        .bind(tenantId, key)
        .all<MoveRow>(),
    );
    return results[0];
  }

  /** The move of a tenant under way (copying or switching), if any. */
  async current(tenantId: number): Promise<MoveRow | undefined> {
    const { results } = await this.run(() =>
      this.db
        .prepare(`SELECT ${COLUMNS} FROM moves WHERE tenant_id = ? AND status IN ('copying', 'switching')`)
        .bind(tenantId)
        .all<MoveRow>(),
    );
    return results[0];
  }

  /** Moves whose mover has work left (a copy, a switch, a removal), whose object may need waking. */
  async underWay(): Promise<MoveRow[]> {
    const { results } = await this.run(() =>
      this.db
        .prepare(`SELECT ${COLUMNS} FROM moves WHERE step ->> '$.phase' <> 'done' ORDER BY id LIMIT 100`)
        .all<MoveRow>(),
    );
    return results;
  }

  /** The mover's next step, and rows copied by this one; false when the move's status changed since it was read. */
  async advance(id: number, status: MoveStatus, step: string, rows: number): Promise<boolean> {
    const result = await this.run(() =>
      this.db
        .prepare('UPDATE moves SET step = ?, rows_copied = rows_copied + ? WHERE id = ? AND status = ?')
        .bind(step, rows, id, status)
        .run(),
    );
    return result.meta.changes === 1;
  }

  /**
   * Moves the move from one of `from` to `to` (with its step, and when it finished or why it
   * failed); false when it was not in one of `from`.
   */
  async mark(
    id: number,
    from: readonly MoveStatus[],
    to: MoveStatus,
    step: string,
    extra: { finishedAt?: number; failure?: string } = {},
  ): Promise<boolean> {
    const result = await this.run(() =>
      this.db
        .prepare(
          `UPDATE moves SET status = ?, step = ?, finished_at = coalesce(?, finished_at), failure = coalesce(?, failure)
           WHERE id = ? AND status IN (SELECT value FROM json_each(?))`,
        )
        .bind(to, step, extra.finishedAt ?? null, extra.failure ?? null, id, JSON.stringify(from))
        .run(),
    );
    return result.meta.changes === 1;
  }

  /** The mover's step alone (after the move ended: what is left to clear). */
  async setStep(id: number, step: string): Promise<void> {
    await this.run(() => this.db.prepare('UPDATE moves SET step = ? WHERE id = ?').bind(step, id).run());
  }

  /** The catalog's route of the tenant: on `to`, active. */
  async route(tenantId: number, to: string): Promise<void> {
    await this.run(() =>
      this.db
        .prepare("UPDATE tenants SET database = ?, status = 'active' WHERE id = ? AND status = 'moving'")
        .bind(to, tenantId)
        .run(),
    );
  }

  /** A move given up: the tenant is active where it was. */
  async stay(tenantId: number): Promise<void> {
    await this.run(() =>
      this.db.prepare("UPDATE tenants SET status = 'active' WHERE id = ? AND status = 'moving'").bind(tenantId).run(),
    );
  }

  /** Where the catalog says the tenant is. */
  async databaseOf(tenantId: number): Promise<string | undefined> {
    const { results } = await this.run(() =>
      this.db.prepare('SELECT database FROM tenants WHERE id = ?').bind(tenantId).all<{ database: string }>(),
    );
    return results[0]?.database;
  }
}
