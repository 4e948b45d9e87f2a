import type { Meter } from './meter.ts';
import type { D1 } from './sessions.ts';

/** A file going up in parts: who started it, what it will be called, the parts R2 holds so far. */
export interface UploadRow {
  id: number;
  upload_id: string;
  workspace_id: number;
  name: string;
  content_type: string;
  created_by: number;
  created_at: number;
  /** `[[partNumber, etag, size], …]`, in order. */
  parts: string;
}

export type Part = [number, string, number];

const INSERT = `INSERT INTO file_uploads (id, upload_id, workspace_id, name, content_type, created_by, created_at)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`;
const GET = `SELECT * FROM file_uploads WHERE id = ?1`;
// A part joins only after those it follows, so two parts sent at once cannot both take one place.
const ADD_PART = `UPDATE file_uploads SET parts = json_insert(parts, '$[#]', json(?2))
  WHERE id = ?1 AND json_array_length(parts) = ?3 RETURNING id`;
const REMOVE = `DELETE FROM file_uploads WHERE id = ?1`;
// Once its file is kept (the file takes the upload's id).
const DONE = `DELETE FROM file_uploads WHERE id = ?1 AND EXISTS (SELECT 1 FROM files WHERE id = ?1)`;
const STALE = `SELECT * FROM file_uploads WHERE created_at < ?1 ORDER BY created_at LIMIT ?2`;

/** Uploads in parts: their rows on the tenant's database until they complete or are given up. */
export class FileUploads {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
  ) {}

  async insert(row: Omit<UploadRow, 'parts'>): Promise<void> {
    const { id, upload_id, workspace_id, name, content_type, created_by, created_at } = row;
    await this.meter.d1(() =>
      this.db.prepare(INSERT).bind(id, upload_id, workspace_id, name, content_type, created_by, created_at).run(),
    );
  }

  async get(id: number): Promise<UploadRow | undefined> {
    const { results } = await this.meter.d1(() => this.db.prepare(GET).bind(id).all<UploadRow>());
    return results[0];
  }

  /** Adds the part after the `before` there are: false when another part took its place first. */
  async addPart(id: number, part: Part, before: number): Promise<boolean> {
    const { results } = await this.meter.d1(() =>
      this.db.prepare(ADD_PART).bind(id, JSON.stringify(part), before).all(),
    );
    return results.length > 0;
  }

  /** The statement that removes an upload's row in the batch that keeps its file, if it was kept. */
  done(id: number): D1PreparedStatement {
    return this.db.prepare(DONE).bind(id);
  }

  async remove(id: number): Promise<void> {
    await this.meter.d1(() => this.db.prepare(REMOVE).bind(id).run());
  }

  /** Uploads started before `before`, oldest first: given up. */
  async stale(before: number, limit: number): Promise<UploadRow[]> {
    const { results } = await this.meter.d1(() => this.db.prepare(STALE).bind(before, limit).all<UploadRow>());
    return results;
  }
}

export const partsOf = (row: UploadRow): Part[] => JSON.parse(row.parts) as Part[];
