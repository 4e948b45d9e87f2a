import { idRange, TENANT_BLOCK } from '../domain/tenant.ts';
import type { Meter } from './meter.ts';
import { nextId } from './sequences.ts';
import type { D1 } from './sessions.ts';

/** A file's row: what its upload answered, who uploaded it, where its bytes are and which record holds it. */
export interface FileRow {
  id: number;
  workspace_id: number;
  name: string;
  size: number;
  content_type: string;
  sha256: string;
  created_by: number;
  created_at: number;
  object_key: string;
  record_id: number | null;
}

/** A file with what decides who may download it: its record's place and the fields that hold it there. */
export interface FileHeld extends FileRow {
  object_id: number | null;
  owned_by: number | null;
  deleted: number | null;
  shared: string | null;
  fields: string | null;
}

/** A file to keep: its id already taken (an upload in parts), or to take now. */
export type NewFile = Omit<FileRow, 'record_id' | 'id'> & { id?: number };

const DATABASE_BYTES = `SELECT coalesce(sum(size), 0) AS bytes FROM files
  WHERE id / ${TENANT_BLOCK} + 1 NOT IN (SELECT tenant_id FROM departures UNION SELECT tenant_id FROM arrivals)`;
const TENANT_BYTES = `SELECT coalesce(sum(size), 0) AS bytes FROM files WHERE id >= ?1 AND id < ?2`;

// Kept only while the tenant's files stay within its quota (`?10`), counted in the same statement.
const INSERT = (id: string): string => `INSERT INTO files (id, workspace_id, name, size, content_type, sha256,
    created_by, created_at, object_key, record_id, free_since)
  SELECT ${id}, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?12, NULL, ?8
  WHERE (SELECT coalesce(sum(size), 0) FROM files WHERE id >= ?9 AND id < ?11) + ?4 <= ?10
  RETURNING id`;

// The record's facts, never its values: only the names of the fields holding the file.
const HELD = `SELECT f.id, f.workspace_id, f.name, f.size, f.content_type, f.sha256, f.created_by, f.created_at,
    f.object_key, f.record_id, r.object_id, r.owned_by, r.deleted,
    (SELECT json_group_array(workspace_id) FROM record_workspaces WHERE record_id = r.id) AS shared,
    (SELECT json_group_array(e.value ->> '$.fieldName') FROM json_each(r.field_values) e
      WHERE EXISTS (SELECT 1 FROM json_each(e.value, '$.value') t
        WHERE t.type = 'object' AND t.value ->> '$.id' = f.id)) AS fields
  FROM files f LEFT JOIN records r ON r.id = f.record_id
  WHERE f.id = ?1`;

// Not of a tenant moving in or gone from this database: its rows here are not the ones that count.
const FREE = `SELECT id FROM files WHERE record_id IS NULL AND free_since < ?1
    AND NOT EXISTS (SELECT 1 FROM departures WHERE tenant_id = id / ${TENANT_BLOCK} + 1)
    AND NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = id / ${TENANT_BLOCK} + 1)
  ORDER BY free_since LIMIT ?2`;
const REMOVE = `DELETE FROM files WHERE record_id IS NULL AND id IN (SELECT value FROM json_each(?1))
  RETURNING id, object_key`;

/** The files of records: their rows on the tenant's database (the bytes are in R2). */
export class Files {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
  ) {}

  /** A new id from the tenant's file sequence: an upload in parts is known by it before its file is kept. */
  async newId(tenantId: number): Promise<number> {
    const { take, id } = nextId(this.db, 'files', tenantId);
    const [, read] = await this.meter.d1(() =>
      this.db.batch<{ id: number }>([take, this.db.prepare(`SELECT ${id} AS id`)]),
    );
    const taken = read?.results[0]?.id;
    if (taken === undefined) throw new Error('no file id taken');
    return taken;
  }

  /** The bytes of a tenant's files. */
  async tenantBytes(tenantId: number): Promise<number> {
    const { lo, hi } = idRange(tenantId);
    const { results } = await this.meter.d1(() => this.db.prepare(TENANT_BYTES).bind(lo, hi).all<{ bytes: number }>());
    return results[0]?.bytes ?? 0;
  }

  /** The bytes of the files of the tenants on this database. */
  async databaseBytes(): Promise<number> {
    const { results } = await this.meter.d1(() => this.db.prepare(DATABASE_BYTES).all<{ bytes: number }>());
    return results[0]?.bytes ?? 0;
  }

  /**
   * Keeps a file's row (a new id taken for it in the same batch unless it has one) unless the
   * tenant's files would pass `quota` bytes with it, in one batch with `then` (statements that must
   * act only if it was kept): its id, or undefined when it was not kept.
   */
  async insert(
    tenantId: number,
    file: NewFile,
    quota: number,
    then: D1PreparedStatement[] = [],
  ): Promise<number | undefined> {
    const { lo, hi } = idRange(tenantId);
    const taking = file.id === undefined ? nextId(this.db, 'files', tenantId) : undefined;
    const insert = this.db
      .prepare(INSERT(taking?.id ?? '?1'))
      .bind(
        file.id ?? null,
        file.workspace_id,
        file.name,
        file.size,
        file.content_type,
        file.sha256,
        file.created_by,
        file.created_at,
        lo,
        quota,
        hi,
        file.object_key,
      );
    const results = await this.meter.d1(() =>
      this.db.batch<{ id: number }>([...(taking === undefined ? [] : [taking.take]), insert, ...then]),
    );
    return results[taking === undefined ? 0 : 1]?.results[0]?.id;
  }

  /** A file and the place of the record holding it, if any (one round trip, whether it exists or not). */
  async held(fileId: number): Promise<FileHeld | undefined> {
    const { results } = await this.meter.d1(() => this.db.prepare(HELD).bind(fileId).all<FileHeld>());
    return results[0];
  }

  /** Files no record has held since before `before`, oldest first. */
  async free(before: number, limit: number): Promise<number[]> {
    const { results } = await this.meter.d1(() => this.db.prepare(FREE).bind(before, limit).all<{ id: number }>());
    return results.map((row) => row.id);
  }

  /** Removes the rows of these files if still no record holds them: where the bytes of those removed are. */
  async remove(ids: readonly number[]): Promise<string[]> {
    const { results } = await this.meter.d1(() =>
      this.db.prepare(REMOVE).bind(JSON.stringify(ids)).all<{ id: number; object_key: string }>(),
    );
    return results.map((row) => row.object_key);
  }
}
