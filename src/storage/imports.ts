import type { Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import type { ColumnMap, ImportMode, ImportState } from '../domain/imports.ts';
import type { Meter } from './meter.ts';
import type { D1 } from './sessions.ts';
import { callerOf, OBJECTS, toObjectDef, userStatement, type ObjectRow } from './store.ts';
import { nextId } from './sequences.ts';
import { tenantOfId } from '../domain/tenant.ts';

/**
 * Imports as D1 keeps them (`imports`, `import_errors`): their creation, the guard that moves a
 * chunk's position in the chunk's own transaction, their errors, cancelling, a user's list.
 */

export type { ImportState, ImportStatus } from '../domain/imports.ts';

export interface NewImport {
  userId: number;
  workspaceId: number;
  objectId: number;
  mode: ImportMode;
  matchOn: string | undefined;
  format: 'ndjson' | 'csv';
  file: string;
  size: number;
  /** The file's data rows, counted as it was kept. */
  total: number;
  /**
   * A CSV file's columns (the field each header cell is read as, null: skipped), and the bytes of
   * the header line (where rows start); an NDJSON file's mapping of keys to fields, if any.
   */
  columns: (string | null)[] | ColumnMap | undefined;
  start: number;
  now: number;
  key: string | undefined;
  requestHash: string | undefined;
}

/** What one chunk did: where the file now stands, its counts, and the rows it skipped. */
export interface ChunkDone {
  from: number;
  to: number;
  processed: number;
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
  errors: { row: number; errors: unknown[] }[];
  /** Where the import stands after the chunk: still running, or ended (the file read, or given up). */
  status: 'running' | 'succeeded' | 'failed';
  /** Why it failed, when it did. */
  failure?: string;
  now: number;
}

/** D1 refused a chunk's guard: the import moved past this chunk (it committed before) or was cancelled. */
export const isChunkMoved = (error: unknown): boolean =>
  error instanceof Error && /NOT NULL constraint failed: imports\.position/.test(error.message);

export class Imports {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
  ) {}

  /**
   * Keeps a new import, queued. A keyed request whose key this user used before creates nothing:
   * the import it created is returned with `again` (the caller compares the request's hash).
   */
  async create(input: NewImport): Promise<{ state: ImportState; again: boolean }> {
    const { take, id } = nextId(this.db, 'imports', tenantOfId(input.userId));
    const [, inserted, existing] = await this.meter.d1(() =>
      this.db.batch<ImportState>([
        take,
        this.db
          .prepare(
            `INSERT INTO imports (id, user_id, workspace_id, object_id, mode, match_on, format, file, size, columns,
               status, position, created_at, idempotency_key, request_hash, updates_only, total)
             VALUES (${id}, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'queued', ?10, ?11, ?12, ?13, ?14, ?15)
             ON CONFLICT (user_id, idempotency_key) DO NOTHING RETURNING *`,
          )
          .bind(
            input.userId,
            input.workspaceId,
            input.objectId,
            input.mode === 'create' ? 'create' : 'upsert',
            input.matchOn ?? null,
            input.format,
            input.file,
            input.size,
            input.columns === undefined ? null : JSON.stringify(input.columns),
            input.start,
            input.now,
            input.key ?? null,
            input.requestHash ?? null,
            input.mode === 'update' ? 1 : 0,
            input.total,
          ),
        this.db
          .prepare('SELECT * FROM imports WHERE user_id = ? AND idempotency_key = ?')
          .bind(input.userId, input.key ?? null),
      ]),
    );
    const created = inserted?.results[0];
    if (created !== undefined) return { state: created, again: false };
    return { state: existing?.results[0] as ImportState, again: true };
  }

  /** Imports still to apply (at most 1,000): the Cron Trigger hands each to its object again. */
  async unfinished(): Promise<number[]> {
    const rows = await this.meter.d1(() =>
      this.db
        .prepare("SELECT id FROM imports WHERE status IN ('queued', 'running') ORDER BY id LIMIT 1000")
        .all<{ id: number }>(),
    );
    return rows.results.map((row) => row.id);
  }

  async get(id: number): Promise<ImportState | undefined> {
    const row = await this.meter.d1(() =>
      this.db.prepare('SELECT * FROM imports WHERE id = ?').bind(id).all<ImportState>(),
    );
    return row.results[0];
  }

  /** An import, its importer as a caller and its object's current definition: what a chunk starts from. One read. */
  async context(id: number): Promise<{ state?: ImportState; caller?: Caller; def?: ObjectDef }> {
    const state = await this.get(id);
    if (state === undefined) return {};
    const [user, objects] = await this.meter.d1(() =>
      this.db.batch([
        userStatement(this.db, state.user_id),
        this.db.prepare(OBJECTS(tenantOfId(id))).bind(JSON.stringify([state.object_id])),
      ]),
    );
    const row = objects?.results[0] as ObjectRow | undefined;
    const caller = callerOf(user);
    return {
      state,
      ...(caller === undefined ? {} : { caller }),
      ...(row === undefined ? {} : { def: toObjectDef(row) }),
    };
  }

  /**
   * The first statement of a chunk's transaction: moves the position from `from` to `to`, adds
   * the counts and sets where the import stands, or aborts the whole transaction (NULL into a NOT
   * NULL column) when the import is no longer at `from` or no longer running. The rows it skipped
   * follow.
   */
  chunk(id: number, done: ChunkDone): D1PreparedStatement[] {
    const guard = this.db
      .prepare(
        `UPDATE imports SET
           position = CASE WHEN position = ?2 AND status IN ('queued', 'running') THEN ?3 END,
           status = ?9, finished_at = CASE WHEN ?9 <> 'running' THEN ?10 END, failure = ?11,
           processed = processed + ?4, created = created + ?5, updated = updated + ?6,
           unchanged = unchanged + ?7, failed = failed + ?8
         WHERE id = ?1`,
      )
      .bind(
        id,
        done.from,
        done.to,
        done.processed,
        done.created,
        done.updated,
        done.unchanged,
        done.failed,
        done.status,
        done.now,
        done.failure ?? null,
      );
    if (done.errors.length === 0) return [guard];
    const errors = this.db
      .prepare(
        `INSERT INTO import_errors (import_id, row, errors)
         SELECT ?1, value ->> 0, value -> 1 FROM json_each(?2)`,
      )
      .bind(id, JSON.stringify(done.errors.map((e) => [e.row, e.errors])));
    return [guard, errors];
  }

  /** Ends a running import as failed (a file it cannot read, an importer who may no longer write). */
  async fail(id: number, position: number, now: number, reason: string): Promise<void> {
    await this.meter.d1(() =>
      this.db
        .prepare(
          `UPDATE imports SET status = 'failed', finished_at = ?3, failure = ?4
           WHERE id = ?1 AND position = ?2 AND status IN ('queued', 'running')`,
        )
        .bind(id, position, now, reason)
        .run(),
    );
  }

  /** Cancels the user's import if it still runs; the import as it now stands (undefined: not theirs). */
  async cancel(id: number, userId: number, now: number): Promise<ImportState | undefined> {
    const [, row] = await this.meter.d1(() =>
      this.db.batch<ImportState>([
        this.db
          .prepare(
            `UPDATE imports SET status = 'cancelled', finished_at = ?3
             WHERE id = ?1 AND user_id = ?2 AND status IN ('queued', 'running')`,
          )
          .bind(id, userId, now),
        this.db.prepare('SELECT * FROM imports WHERE id = ? AND user_id = ?').bind(id, userId),
      ]),
    );
    return row?.results[0];
  }

  /**
   * The user's imports into the workspace with ids below `before`, newest first, at most `limit`;
   * everyone's when the user administers their tenant.
   */
  async list(userId: number, workspaceId: number, before: number, limit: number): Promise<ImportState[]> {
    const rows = await this.meter.d1(() =>
      this.db
        .prepare(
          `SELECT * FROM imports WHERE workspace_id = ?2 AND id < ?3
             AND (user_id = ?1 OR EXISTS (SELECT 1 FROM users WHERE id = ?1 AND admin = 1))
           ORDER BY id DESC LIMIT ?4`,
        )
        .bind(userId, workspaceId, before, limit)
        .all<ImportState>(),
    );
    return rows.results;
  }

  /** The rows the import skipped after row `after`, at most `limit`, in row order. */
  async errors(id: number, after: number, limit: number): Promise<{ row: number; errors: string }[]> {
    const rows = await this.meter.d1(() =>
      this.db
        .prepare('SELECT row, errors FROM import_errors WHERE import_id = ? AND row > ? ORDER BY row LIMIT ?')
        .bind(id, after, limit)
        .all<{ row: number; errors: string }>(),
    );
    return rows.results;
  }
}
