import type { Caller, Role } from '../domain/access.ts';
import type { FieldDef, ObjectDef } from '../domain/definition.ts';
import type { ObjectDefinitionIn } from '../schemas/admin.ts';
import type { FieldValueOut, RecordOut } from '../schemas/record.ts';
import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';

/** All SQL of the service. Every method is one D1 round trip unless it says otherwise. */

export interface RecordRow {
  id: number;
  object_id: number;
  object_version: number;
  name: string;
  field_values: string;
  creation_type: 'System' | 'User';
  version: number;
  deleted: number;
  owned_by: number | null;
  created_at: number;
  created_by: number;
  updated_at: number;
  updated_by: number;
  is_template: number;
}

interface ObjectRow {
  id: number;
  version: number;
  name: string;
  name_template: string | null;
  fields: string;
  workspace_ids: string;
}

export type RecordReadRow = RecordRow & { shared_workspace_ids: string };

export interface RecordContext {
  caller: Caller | undefined;
  records: Map<number, RecordOut>;
  objects: Map<number, ObjectDef>;
}

interface CallerRow {
  user_id: number;
  workspace_id: number | null;
  role: Role | null;
}

const CALLER = `SELECT k.user_id, m.workspace_id, m.role FROM api_keys k
  LEFT JOIN memberships m ON m.user_id = k.user_id WHERE k.key_hash = ?`;

/** The caller behind a key hash: a statement to batch with others, and how to read its result. */
export const callerStatement = (db: D1Database, keyHash: string): D1PreparedStatement => db.prepare(CALLER).bind(keyHash);
export const callerOf = (result: D1Result<unknown> | undefined): Caller | undefined => toCaller(rowsOf(result));

const OBJECTS = `SELECT v.object_id AS id, v.version, v.name, v.name_template, v.fields, v.workspace_ids
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE o.id IN (SELECT value FROM json_each(?))`;

const OBJECTS_OF_RECORDS = `SELECT v.object_id AS id, v.version, v.name, v.name_template, v.fields, v.workspace_ids
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE o.id IN (SELECT object_id FROM records WHERE id IN (SELECT value FROM json_each(?)))`;

/** A record's columns and its sharing, as recordsOf() reads them; `r` is the records table. */
export const RECORD_COLUMNS = `r.*, (SELECT json_group_array(workspace_id) FROM
    (SELECT workspace_id FROM record_workspaces WHERE record_id = r.id ORDER BY workspace_id)) AS shared_workspace_ids`;

const RECORDS = `SELECT ${RECORD_COLUMNS} FROM records r WHERE r.id IN (SELECT value FROM json_each(?))`;

export class Store {
  constructor(
    private readonly db: D1Database,
    private readonly meter: Meter,
  ) {}

  /** One round trip. Only idempotent work (reads, version-guarded writes) is retried. */
  private batch<T>(statements: D1PreparedStatement[], idempotent = true): Promise<D1Result<T>[]> {
    const once = (): Promise<D1Result<T>[]> => this.meter.d1(() => this.db.batch<T>(statements));
    return idempotent ? retrying(once) : once();
  }

  private all<T>(statement: D1PreparedStatement, idempotent = true): Promise<T[]> {
    const once = async (): Promise<T[]> => this.meter.d1(async () => (await statement.all<T>()).results);
    return idempotent ? retrying(once) : once();
  }

  /** The caller behind a key hash and the current definitions of `objectIds`, in one round trip. */
  async createContext(keyHash: string, objectIds: readonly number[]): Promise<{ caller: Caller | undefined; objects: Map<number, ObjectDef> }> {
    const [callers, objects] = await this.batch<unknown>([
      this.db.prepare(CALLER).bind(keyHash),
      this.db.prepare(OBJECTS).bind(JSON.stringify(objectIds)),
    ]);
    return { caller: toCaller(rowsOf(callers)), objects: objectMap(rowsOf(objects)) };
  }

  /**
   * The caller behind a key hash, the records `recordIds` and the current definitions of their
   * objects, in one round trip: all a read or a patch needs to decide.
   */
  async recordContext(keyHash: string, recordIds: readonly number[]): Promise<RecordContext> {
    const ids = JSON.stringify(recordIds);
    const [callers, records, objects] = await this.batch<unknown>([
      this.db.prepare(CALLER).bind(keyHash),
      this.db.prepare(RECORDS).bind(ids),
      this.db.prepare(OBJECTS_OF_RECORDS).bind(ids),
    ]);
    return { caller: toCaller(rowsOf(callers)), records: recordMap(rowsOf(records)), objects: objectMap(rowsOf(objects)) };
  }

  /** The stored state of records, e.g. after a write lost to a concurrent one. */
  async getRecords(recordIds: readonly number[]): Promise<Map<number, RecordOut>> {
    return recordMap(await this.all<RecordReadRow>(this.db.prepare(RECORDS).bind(JSON.stringify(recordIds))));
  }

  async ping(): Promise<boolean> {
    const rows = await this.all<{ ok: number }>(this.db.prepare('SELECT 1 AS ok'));
    return rows[0]?.ok === 1;
  }

  // ---- admin -------------------------------------------------------------------------------

  async createUser(name: string, now: number): Promise<{ id: number; name: string }> {
    const rows = await this.all<{ id: number; name: string }>(
      this.db.prepare('INSERT INTO users (name, created_at) VALUES (?, ?) RETURNING id, name').bind(name, now),
      false,
    );
    return single(rows);
  }

  async createWorkspace(name: string, now: number): Promise<{ id: number; name: string }> {
    const rows = await this.all<{ id: number; name: string }>(
      this.db.prepare('INSERT INTO workspaces (name, created_at) VALUES (?, ?) RETURNING id, name').bind(name, now),
      false,
    );
    return single(rows);
  }

  /** Sets a role; false when the workspace or the user does not exist. */
  async putMember(workspaceId: number, userId: number, role: Role): Promise<boolean> {
    const rows = await this.all(
      this.db
        .prepare(
          `INSERT INTO memberships (workspace_id, user_id, role)
           SELECT w.id, u.id, ?3 FROM workspaces w, users u WHERE w.id = ?1 AND u.id = ?2
           ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role RETURNING role`,
        )
        .bind(workspaceId, userId, role),
    );
    return rows.length === 1;
  }

  /** Removes a membership (if any); false when the workspace or the user does not exist. */
  async deleteMember(workspaceId: number, userId: number): Promise<boolean> {
    const [, exists] = await this.batch<{ found: number }>([
      this.db.prepare('DELETE FROM memberships WHERE workspace_id = ? AND user_id = ?').bind(workspaceId, userId),
      this.db
        .prepare('SELECT (SELECT count(*) FROM workspaces WHERE id = ?) + (SELECT count(*) FROM users WHERE id = ?) AS found')
        .bind(workspaceId, userId),
    ]);
    return exists?.results[0]?.found === 2;
  }

  /** Which of `ids` are existing workspaces. */
  async existingWorkspaces(ids: readonly number[]): Promise<Set<number>> {
    const rows = await this.all<{ id: number }>(
      this.db.prepare('SELECT id FROM workspaces WHERE id IN (SELECT value FROM json_each(?))').bind(JSON.stringify(ids)),
    );
    return new Set(rows.map((row) => row.id));
  }

  /** Creates an object with its version 1. */
  async createObject(input: ObjectDefinitionIn, now: number): Promise<ObjectDef> {
    const [, inserted] = await this.batch<ObjectRow>([
      this.db.prepare('INSERT INTO objects (current_version) VALUES (1)'),
      this.insertVersion('(SELECT max(id) FROM objects)', input, now),
    ], false);
    return toObjectDef(single(inserted?.results ?? []));
  }

  /** Adds the next version of an existing object; undefined when it does not exist. */
  async updateObject(id: number, input: ObjectDefinitionIn, now: number): Promise<ObjectDef | undefined> {
    const [, inserted] = await this.batch<ObjectRow>([
      this.db.prepare('UPDATE objects SET current_version = current_version + 1 WHERE id = ?').bind(id),
      this.insertVersion('?', input, now, id),
    ], false);
    const row = inserted?.results[0];
    return row === undefined ? undefined : toObjectDef(row);
  }

  private insertVersion(objectId: string, input: ObjectDefinitionIn, now: number, ...idParam: number[]): D1PreparedStatement {
    return this.db
      .prepare(
        `INSERT INTO object_versions (object_id, version, name, name_template, fields, workspace_ids, created_at)
         SELECT id, current_version, ?, ?, ?, ?, ? FROM objects WHERE id = ${objectId}
         RETURNING object_id AS id, version, name, name_template, fields, workspace_ids`,
      )
      .bind(
        input.name,
        input.nameTemplate ?? null,
        JSON.stringify(input.fields),
        JSON.stringify([...new Set(input.workspaceIds)].sort((a, b) => a - b)),
        now,
        ...idParam,
      );
  }

  async getObject(id: number): Promise<ObjectDef | undefined> {
    const rows = await this.all<ObjectRow>(this.db.prepare(OBJECTS).bind(JSON.stringify([id])));
    return rows[0] === undefined ? undefined : toObjectDef(rows[0]);
  }

  /** One kept version of an object definition (CONTRACT §13). */
  async getObjectVersion(id: number, version: number): Promise<ObjectDef | undefined> {
    const rows = await this.all<ObjectRow>(
      this.db
        .prepare('SELECT object_id AS id, version, name, name_template, fields, workspace_ids FROM object_versions WHERE object_id = ? AND version = ?')
        .bind(id, version),
    );
    return rows[0] === undefined ? undefined : toObjectDef(rows[0]);
  }
}

function single<T>(rows: readonly T[]): T {
  const row = rows[0];
  if (row === undefined) throw new Error('expected one row');
  return row;
}

function rowsOf<T>(result: D1Result<unknown> | undefined): T[] {
  return (result?.results ?? []) as T[];
}

function objectMap(rows: readonly ObjectRow[]): Map<number, ObjectDef> {
  return new Map(rows.map((row) => [row.id, toObjectDef(row)]));
}

function recordMap(rows: readonly RecordReadRow[]): Map<number, RecordOut> {
  return new Map(recordsOf(rows).map((record) => [record.id, record]));
}

/** Rows read with RECORD_COLUMNS, as records, in their order. */
export function recordsOf(rows: readonly RecordReadRow[]): RecordOut[] {
  return rows.map((row) => toRecord(row, JSON.parse(row.shared_workspace_ids) as number[]));
}

function toCaller(rows: readonly CallerRow[]): Caller | undefined {
  const first = rows[0];
  if (first === undefined) return undefined;
  const roles = new Map<number, Role>();
  for (const row of rows) if (row.workspace_id !== null && row.role !== null) roles.set(row.workspace_id, row.role);
  return { userId: first.user_id, roles };
}

function toObjectDef(row: ObjectRow): ObjectDef {
  const def: ObjectDef = {
    id: row.id,
    version: row.version,
    name: row.name,
    workspaceIds: JSON.parse(row.workspace_ids) as number[],
    fields: JSON.parse(row.fields) as FieldDef[],
  };
  if (row.name_template !== null) def.nameTemplate = row.name_template;
  return def;
}

/** The one serialization of a record (CONTRACT §1: identical wherever it appears). */
function toRecord(row: RecordRow, sharedWorkspaceIds: number[]): RecordOut {
  return {
    id: row.id,
    objectId: row.object_id,
    objectVersion: row.object_version,
    name: row.name,
    fieldValues: JSON.parse(row.field_values) as FieldValueOut[],
    creationType: row.creation_type,
    version: row.version,
    deleted: row.deleted === 1,
    sharedWorkspaceIds,
    ownedBy: row.owned_by,
    createdAt: row.created_at,
    createdBy: row.created_by,
    updatedAt: row.updated_at,
    updatedBy: row.updated_by,
    isTemplate: row.is_template === 1,
  };
}
