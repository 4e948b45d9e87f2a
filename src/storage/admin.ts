import type { Role } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import type { ObjectDefinitionIn } from '../schemas/admin.ts';
import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import { OBJECTS, toObjectDef, type ObjectRow } from './store.ts';
import type { D1 } from './sessions.ts';

/**
 * The SQL of the admin API: users, workspaces, memberships and object definitions. Every
 * method is one D1 round trip. Reads are retried on transient failures; writes are not, since a
 * lost answer after a commit would make a retry create a second user or report a missing one.
 */

export interface Named {
  id: number;
  name: string;
}

export interface Member {
  workspaceId: number;
  userId: number;
  role: Role;
}

/** Why a workspace cannot be deleted: the objects whose current version lists it, and whether records are shared with it. */
export interface WorkspaceInUse {
  objectIds: number[];
  hasRecords: boolean;
}

export type WorkspaceDeletion =
  { deleted: true } | { deleted: false; exists: false } | { deleted: false; exists: true; inUse: WorkspaceInUse };

const DEFINITION_COLUMNS = 'v.object_id AS id, v.version, v.name, v.name_template, v.fields, v.workspace_ids';

/** Object ids whose current version lists the workspace `?1`. */
const OBJECTS_LISTING = `SELECT o.id FROM objects o
  JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE EXISTS (SELECT 1 FROM json_each(v.workspace_ids) j WHERE j.value = ?1)`;

/** True when nothing keeps workspace `?1`: no current definition lists it and no record is shared with it. */
const UNUSED = `NOT EXISTS (${OBJECTS_LISTING}) AND NOT EXISTS (SELECT 1 FROM record_workspaces WHERE workspace_id = ?1)`;

export class AdminStore {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
  ) {}

  private batch<T>(statements: D1PreparedStatement[], idempotent: boolean): Promise<D1Result<T>[]> {
    const once = (): Promise<D1Result<T>[]> => this.meter.d1(() => this.db.batch<T>(statements));
    return idempotent ? retrying(once) : once();
  }

  private all<T>(statement: D1PreparedStatement, idempotent: boolean): Promise<T[]> {
    const once = async (): Promise<T[]> => this.meter.d1(async () => (await statement.all<T>()).results);
    return idempotent ? retrying(once) : once();
  }

  async createUser(name: string, now: number): Promise<Named> {
    const rows = await this.all<Named>(
      this.db.prepare('INSERT INTO users (name, created_at) VALUES (?, ?) RETURNING id, name').bind(name, now),
      false,
    );
    return single(rows);
  }

  /** Users with an id above `after`, ascending, at most `limit`. */
  async listUsers(after: number, limit: number): Promise<Named[]> {
    return this.all<Named>(
      this.db.prepare('SELECT id, name FROM users WHERE id > ? ORDER BY id LIMIT ?').bind(after, limit),
      true,
    );
  }

  /**
   * Deletes a user with their keys and memberships, in one D1 transaction; the hashes of the
   * keys it revoked (to forget them in this isolate's memory), or undefined when there was no
   * such user. Records keep the user's id: they hold it as a plain number.
   */
  async deleteUser(userId: number): Promise<{ keyHashes: string[] } | undefined> {
    const [keys, , , users] = await this.batch<unknown>(
      [
        this.db.prepare('SELECT key_hash FROM api_keys WHERE user_id = ?').bind(userId),
        this.db.prepare('DELETE FROM api_keys WHERE user_id = ?').bind(userId),
        this.db.prepare('DELETE FROM memberships WHERE user_id = ?').bind(userId),
        this.db.prepare('DELETE FROM users WHERE id = ? RETURNING id').bind(userId),
      ],
      false,
    );
    if (users?.results.length !== 1) return undefined;
    return { keyHashes: (keys?.results as { key_hash: string }[]).map((row) => row.key_hash) };
  }

  async createWorkspace(name: string, now: number): Promise<Named> {
    const rows = await this.all<Named>(
      this.db.prepare('INSERT INTO workspaces (name, created_at) VALUES (?, ?) RETURNING id, name').bind(name, now),
      false,
    );
    return single(rows);
  }

  /** Workspaces with an id above `after`, ascending, at most `limit`. */
  async listWorkspaces(after: number, limit: number): Promise<Named[]> {
    return this.all<Named>(
      this.db.prepare('SELECT id, name FROM workspaces WHERE id > ? ORDER BY id LIMIT ?').bind(after, limit),
      true,
    );
  }

  /**
   * Deletes a workspace and its memberships when nothing keeps it (no current object definition
   * lists it, no record is shared with it), checked in the same D1 transaction as the deletes.
   * A record cannot be shared with it afterwards (its sharing rows reference the workspace); a
   * definition saved at the same moment may still name it, since saving one checks its
   * workspaces in a read of its own.
   */
  async deleteWorkspace(workspaceId: number): Promise<WorkspaceDeletion> {
    const [, deleted, exists, objects, records] = await this.batch<unknown>(
      [
        this.db.prepare(`DELETE FROM memberships WHERE workspace_id = ?1 AND ${UNUSED}`).bind(workspaceId),
        this.db.prepare(`DELETE FROM workspaces WHERE id = ?1 AND ${UNUSED} RETURNING id`).bind(workspaceId),
        this.db.prepare('SELECT id FROM workspaces WHERE id = ?').bind(workspaceId),
        this.db.prepare(`${OBJECTS_LISTING} ORDER BY o.id LIMIT 100`).bind(workspaceId),
        this.db
          .prepare('SELECT EXISTS (SELECT 1 FROM record_workspaces WHERE workspace_id = ?) AS shared')
          .bind(workspaceId),
      ],
      false,
    );
    if (deleted?.results.length === 1) return { deleted: true };
    if (exists?.results.length !== 1) return { deleted: false, exists: false };
    const objectIds = (objects?.results as { id: number }[]).map((row) => row.id);
    const hasRecords = (records?.results[0] as { shared: number } | undefined)?.shared === 1;
    return { deleted: false, exists: true, inUse: { objectIds, hasRecords } };
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
      true,
    );
    return rows.length === 1;
  }

  /** Removes a membership (if any); false when the workspace or the user does not exist. */
  async deleteMember(workspaceId: number, userId: number): Promise<boolean> {
    const [, exists] = await this.batch<{ found: number }>(
      [
        this.db.prepare('DELETE FROM memberships WHERE workspace_id = ? AND user_id = ?').bind(workspaceId, userId),
        this.db
          .prepare(
            'SELECT (SELECT count(*) FROM workspaces WHERE id = ?) + (SELECT count(*) FROM users WHERE id = ?) AS found',
          )
          .bind(workspaceId, userId),
      ],
      true,
    );
    return exists?.results[0]?.found === 2;
  }

  /** The members of a workspace with a user id above `after`, ascending, at most `limit`; undefined when there is no such workspace. */
  async listMembers(workspaceId: number, after: number, limit: number): Promise<Member[] | undefined> {
    const [workspace, members] = await this.batch<unknown>(
      [
        this.db.prepare('SELECT id FROM workspaces WHERE id = ?').bind(workspaceId),
        this.db
          .prepare(
            'SELECT workspace_id AS workspaceId, user_id AS userId, role FROM memberships WHERE workspace_id = ? AND user_id > ? ORDER BY user_id LIMIT ?',
          )
          .bind(workspaceId, after, limit),
      ],
      true,
    );
    if (workspace?.results.length !== 1) return undefined;
    return members?.results as Member[];
  }

  /** Which of `ids` are existing workspaces. */
  async existingWorkspaces(ids: readonly number[]): Promise<Set<number>> {
    const rows = await this.all<{ id: number }>(
      this.db
        .prepare('SELECT id FROM workspaces WHERE id IN (SELECT value FROM json_each(?))')
        .bind(JSON.stringify(ids)),
      true,
    );
    return new Set(rows.map((row) => row.id));
  }

  /** Creates an object with its version 1. */
  async createObject(input: ObjectDefinitionIn, now: number): Promise<ObjectDef> {
    const [, inserted] = await this.batch<ObjectRow>(
      [
        this.db.prepare('INSERT INTO objects (current_version) VALUES (1)'),
        this.insertVersion('(SELECT max(id) FROM objects)', input, now),
      ],
      false,
    );
    return toObjectDef(single(inserted?.results ?? []));
  }

  /** Adds the next version of an existing object; undefined when it does not exist. */
  async updateObject(id: number, input: ObjectDefinitionIn, now: number): Promise<ObjectDef | undefined> {
    const [, inserted] = await this.batch<ObjectRow>(
      [
        this.db.prepare('UPDATE objects SET current_version = current_version + 1 WHERE id = ?').bind(id),
        this.insertVersion('?', input, now, id),
      ],
      false,
    );
    const row = inserted?.results[0];
    return row === undefined ? undefined : toObjectDef(row);
  }

  private insertVersion(
    objectId: string,
    input: ObjectDefinitionIn,
    now: number,
    ...idParam: number[]
  ): D1PreparedStatement {
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
    const rows = await this.all<ObjectRow>(this.db.prepare(OBJECTS).bind(JSON.stringify([id])), true);
    return rows[0] === undefined ? undefined : toObjectDef(rows[0]);
  }

  /** The current definitions of objects with an id above `after`, ascending, at most `limit`. */
  async listObjects(after: number, limit: number): Promise<ObjectDef[]> {
    const rows = await this.all<ObjectRow>(
      this.db
        .prepare(
          `SELECT ${DEFINITION_COLUMNS} FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
           WHERE o.id > ? ORDER BY o.id LIMIT ?`,
        )
        .bind(after, limit),
      true,
    );
    return rows.map(toObjectDef);
  }

  /** One kept version of an object definition. */
  async getObjectVersion(id: number, version: number): Promise<ObjectDef | undefined> {
    const rows = await this.all<ObjectRow>(
      this.db
        .prepare(`SELECT ${DEFINITION_COLUMNS} FROM object_versions v WHERE v.object_id = ? AND v.version = ?`)
        .bind(id, version),
      true,
    );
    return rows[0] === undefined ? undefined : toObjectDef(rows[0]);
  }
}

function single<T>(rows: readonly T[]): T {
  const row = rows[0];
  if (row === undefined) throw new Error('expected one row');
  return row;
}
