import type { ObjectRule, Role } from '../domain/access.ts';
import { idRange } from '../domain/tenant.ts';
import type { FieldDef, ObjectDef, RollupReader } from '../domain/definition.ts';
import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import { FORMULAS_BUILD, ROLLUPS_BUILD } from './record-index.ts';
import { OBJECTS, toObjectDef, type ObjectRow } from './store.ts';
import type { D1 } from './sessions.ts';

/**
 * The reads of the admin API: users, workspaces, memberships and object definitions. Every
 * method is one D1 round trip, retried on transient failures. Its writes are in admin-writes.ts.
 */

export interface Named {
  id: number;
  name: string;
}

export interface Member {
  workspaceId: number;
  userId: number;
  role?: Role;
  roleId?: number;
}

/** A role the tenant defined, as the admin API shows it. */
export interface RoleOut {
  id: number;
  name: string;
  objects: ObjectRule[];
}

const DEFINITION_COLUMNS = 'v.object_id AS id, v.version, v.name, v.name_template, v.fields, v.workspace_ids';

export class AdminStore {
  /** `tenant`: whose entities are listed (the ids of its block). */
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
    private readonly tenant: number,
  ) {}

  /** The ids of the tenant's block after `after`: `[from, below]` for `id > ?1 AND id < ?2`. */
  private block(after: number): [number, number] {
    const { lo, hi } = idRange(this.tenant);
    return [Math.max(after, lo), hi];
  }

  private batch<T>(statements: D1PreparedStatement[], idempotent: boolean): Promise<D1Result<T>[]> {
    const once = (): Promise<D1Result<T>[]> => this.meter.d1(() => this.db.batch<T>(statements));
    return idempotent ? retrying(once) : once();
  }

  private all<T>(statement: D1PreparedStatement, idempotent: boolean): Promise<T[]> {
    const once = async (): Promise<T[]> => this.meter.d1(async () => (await statement.all<T>()).results);
    return idempotent ? retrying(once) : once();
  }

  /** Users with an id above `after`, ascending, at most `limit` (an administrator says so). */
  async listUsers(after: number, limit: number): Promise<(Named & { admin?: true })[]> {
    const rows = await this.all<Named & { admin: number }>(
      this.db
        .prepare('SELECT id, name, admin FROM users WHERE id > ?1 AND id < ?2 ORDER BY id LIMIT ?3')
        .bind(...this.block(after), limit),
      true,
    );
    return rows.map(({ id, name, admin }) => (admin === 1 ? { id, name, admin: true } : { id, name }));
  }

  /** Workspaces with an id above `after`, ascending, at most `limit`. */
  async listWorkspaces(after: number, limit: number): Promise<Named[]> {
    return this.all<Named>(
      this.db
        .prepare('SELECT id, name FROM workspaces WHERE id > ?1 AND id < ?2 ORDER BY id LIMIT ?3')
        .bind(...this.block(after), limit),
      true,
    );
  }

  /**
   * The members of a workspace with a user id above `after`, ascending, at most `limit`; undefined
   * when there is no such workspace.
   */
  async listMembers(workspaceId: number, after: number, limit: number): Promise<Member[] | undefined> {
    const [workspace, members] = await this.batch<unknown>(
      [
        this.db.prepare('SELECT id FROM workspaces WHERE id = ?').bind(workspaceId),
        this.db
          .prepare(
            'SELECT workspace_id, user_id, role, role_id FROM memberships WHERE ' +
              'workspace_id = ? AND user_id > ? ORDER BY user_id LIMIT ?',
          )
          .bind(workspaceId, after, limit),
      ],
      true,
    );
    if (workspace?.results.length !== 1) return undefined;
    return (members?.results as MemberRow[]).map(memberOf);
  }

  /** Roles the tenant defined with an id above `after`, ascending, at most `limit`. */
  async listRoles(after: number, limit: number): Promise<RoleOut[]> {
    const rows = await this.all<RoleRow>(
      this.db
        .prepare('SELECT id, name, objects FROM roles WHERE id > ?1 AND id < ?2 ORDER BY id LIMIT ?3')
        .bind(...this.block(after), limit),
      true,
    );
    return rows.map(roleOf);
  }

  /** The fields of `objectId` that each role of the tenant hides (roles hiding none left out). */
  async hiddenFields(objectId: number): Promise<Set<string>[]> {
    const rows = await this.all<{ fields: string }>(
      this.db
        .prepare(
          `SELECT json_group_array(f.key) AS fields
           FROM roles ro, json_each(ro.objects) j, json_each(j.value, '$.fields') f
           WHERE ro.id > ?1 AND ro.id < ?2 AND j.value ->> '$.objectId' = ?3 AND f.value = 'hidden' GROUP BY ro.id`,
        )
        .bind(...this.block(0), objectId),
      true,
    );
    return rows.map((row) => new Set(JSON.parse(row.fields) as string[]));
  }

  /** A role the tenant defined. */
  async getRole(id: number): Promise<RoleOut | undefined> {
    const rows = await this.all<RoleRow>(
      this.db.prepare('SELECT id, name, objects FROM roles WHERE id = ?').bind(id),
      true,
    );
    return rows[0] === undefined ? undefined : roleOf(rows[0]);
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

  /** The fields of every version of an object, oldest first (empty: no such object). */
  async fieldHistory(objectId: number): Promise<FieldDef[][]> {
    const rows = await this.all<{ fields: string }>(
      this.db.prepare('SELECT fields FROM object_versions WHERE object_id = ? ORDER BY version').bind(objectId),
      true,
    );
    return rows.map((row) => JSON.parse(row.fields) as FieldDef[]);
  }

  /** The rollups of other objects that read object `objectId`'s records. */
  async rollupReaders(objectId: number): Promise<RollupReader[]> {
    return this.all<RollupReader>(
      this.db
        .prepare(
          `SELECT object_id AS objectId, name, from_field AS field, of FROM rollup_fields
           WHERE from_object = ?1 AND object_id <> ?1`,
        )
        .bind(objectId),
      true,
    );
  }

  /** The current definitions of the objects of `ids` that exist, by id. One round trip. */
  async objects(ids: readonly number[]): Promise<Map<number, ObjectDef>> {
    if (ids.length === 0) return new Map();
    const rows = await this.all<ObjectRow>(
      this.db.prepare(OBJECTS(this.tenant)).bind(JSON.stringify([...new Set(ids)])),
      true,
    );
    return new Map(rows.map((row) => [row.id, toObjectDef(row)]));
  }

  async getObject(id: number): Promise<ObjectDef | undefined> {
    const rows = await this.all<ObjectRow>(this.db.prepare(OBJECTS(this.tenant)).bind(JSON.stringify([id])), true);
    return rows[0] === undefined ? undefined : toObjectDef(rows[0]);
  }

  /**
   * Where the computations of the object's formulas and of its rollups for its records are (a
   * record id), of those that are due.
   */
  async computing(id: number): Promise<{ formulas?: number; rollups?: number }> {
    const rows = await this.all<{ field: string; after: number }>(
      this.db
        .prepare('SELECT field, after_record_id AS after FROM index_builds WHERE object_id = ? AND field IN (?, ?)')
        .bind(id, FORMULAS_BUILD, ROLLUPS_BUILD),
      true,
    );
    const at = (field: string) => rows.find((row) => row.field === field)?.after;
    const [formulas, rollups] = [at(FORMULAS_BUILD), at(ROLLUPS_BUILD)];
    return { ...(formulas === undefined ? {} : { formulas }), ...(rollups === undefined ? {} : { rollups }) };
  }

  /** The current definitions of objects with an id above `after`, ascending, at most `limit`. */
  async listObjects(after: number, limit: number): Promise<ObjectDef[]> {
    const rows = await this.all<ObjectRow>(
      this.db
        .prepare(
          `SELECT ${DEFINITION_COLUMNS} FROM objects o JOIN object_versions v 
             ON v.object_id = o.id AND v.version = o.current_version
           WHERE o.id > ?1 AND o.id < ?2 ORDER BY o.id LIMIT ?3`,
        )
        .bind(...this.block(after), limit),
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

interface MemberRow {
  workspace_id: number;
  user_id: number;
  role: Role;
  role_id: number | null;
}

/** A membership as the admin API shows it: its built-in role, or the role it names. */
const memberOf = (row: MemberRow): Member =>
  row.role_id === null
    ? { workspaceId: row.workspace_id, userId: row.user_id, role: row.role }
    : { workspaceId: row.workspace_id, userId: row.user_id, roleId: row.role_id };

interface RoleRow {
  id: number;
  name: string;
  objects: string;
}

const roleOf = (row: RoleRow): RoleOut => ({
  id: row.id,
  name: row.name,
  objects: JSON.parse(row.objects) as ObjectRule[],
});
