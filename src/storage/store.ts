import type { Caller, Grant, ObjectRule, Role } from '../domain/access.ts';
import { TENANT_BLOCK } from '../domain/tenant.ts';
import type { FieldDef, ObjectDef } from '../domain/definition.ts';
import type { FieldValueOut, RecordOut } from '../schemas/record.ts';
import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import type { D1 } from './sessions.ts';
import { inTenant, tenantIds } from '../tenancy/tenant-scope.ts';

/**
 * The SQL of records as requests read them (the caller, records, definitions); the admin API's
 * is in admin.ts. Every method is one D1 round trip unless it says otherwise.
 */

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

/** An object definition's row, as every query of definitions reads it. */
export interface ObjectRow {
  id: number;
  version: number;
  name: string;
  name_template: string | null;
  fields: string;
  workspace_ids: string;
}

export type RecordReadRow = RecordRow & { shared_workspace_ids: string; keyed?: number; rollups?: string | null };

/**
 * Records read from D1 whose row holds its keys (every record but one written before records had
 * them, until the background fill reaches it), and records written with them: a write that keeps
 * such a record's name (and text values) need not compute its keys again. A record that is not
 * here (one that crossed an object call, say) gets its keys computed.
 */
export const keyedRecords = new WeakSet<RecordOut>();

/**
 * The rollups of records as read with them, by field name: what a read shows (`withRollups`). They
 * stay beside the record, never in its values, so no write stores them.
 */
export const rollupsRead = new WeakMap<RecordOut, Readonly<Record<string, unknown>>>();

export interface RecordContext {
  caller: Caller | undefined;
  records: Map<number, RecordOut>;
  objects: Map<number, ObjectDef>;
}

interface CallerRow {
  user_id: number;
  workspace_id: number | null;
  role: Role | null;
  role_id: number | null;
  role_objects: string | null;
}

// A key of a tenant deleted from this database finds no caller here. One that moved away still
// reads here (its rows stay until every isolate has read its new route), and never writes here.
const HERE = (userId: string): string =>
  `NOT EXISTS (SELECT 1 FROM departures d WHERE d.tenant_id = ${userId} / ${TENANT_BLOCK} + 1 AND d.state = 'deleted')`;
// And a key is the caller of a request only when its user is of the tenant the request was routed to.
// A membership under a defined role brings the role's rules with it: a role costs no round trip.
const CALLER = (tenant: number): string => `SELECT k.user_id, m.workspace_id, m.role, m.role_id,
    ro.objects AS role_objects FROM api_keys k
  LEFT JOIN memberships m ON m.user_id = k.user_id LEFT JOIN roles ro ON ro.id = m.role_id
  WHERE k.key_hash = ? AND ${inTenant('k.user_id', tenant)} AND ${HERE('k.user_id')}`;

const PROFILE = (tenant: number): string => `SELECT u.id AS user_id, u.name, u.admin, m.workspace_id,
    w.name AS workspace_name, m.role, m.role_id, ro.objects AS role_objects
  FROM api_keys k JOIN users u ON u.id = k.user_id
  LEFT JOIN memberships m ON m.user_id = u.id LEFT JOIN workspaces w ON w.id = m.workspace_id
  LEFT JOIN roles ro ON ro.id = m.role_id
  WHERE k.key_hash = ? AND ${inTenant('k.user_id', tenant)} AND ${HERE('k.user_id')} ORDER BY m.workspace_id`;

/** The user behind a key hash and whether they administer `tenant`, as one statement; `u` is users. */
export const HOLDER = (tenant: number): string => `SELECT u.id, u.admin FROM api_keys k JOIN users u ON u.id = k.user_id
  WHERE k.key_hash = ? AND ${inTenant('u.id', tenant)} AND ${HERE('u.id')}`;

interface ProfileRow {
  user_id: number;
  name: string;
  admin: number;
  workspace_id: number | null;
  workspace_name: string | null;
  role: Role | null;
  role_id: number | null;
  role_objects: string | null;
}

/** A workspace of a user's, and the role they hold there: built in, or defined (with its rules). */
type ProfileWorkspace = { workspaceId: number; name: string } & (
  { role: Role } | { roleId: number; objects: ObjectRule[] }
);

/** A user as `GET /me` shows them. */
export interface Profile {
  userId: number;
  name: string;
  admin: boolean;
  workspaces: ProfileWorkspace[];
}

// The callers behind every key hash of the JSON array bound to `?`, in one statement.
const CALLERS = (tenant: number): string => `SELECT k.key_hash, k.user_id, m.workspace_id, m.role, m.role_id,
    ro.objects AS role_objects FROM api_keys k
  LEFT JOIN memberships m ON m.user_id = k.user_id LEFT JOIN roles ro ON ro.id = m.role_id
  WHERE k.key_hash IN (SELECT value FROM json_each(?)) AND ${inTenant('k.user_id', tenant)} AND ${HERE('k.user_id')}`;

/** The callers behind these key hashes among `tenant`'s users (a key missing: revoked, or its user gone). */
export const callersStatement = (db: D1, keyHashes: readonly string[], tenant: number): D1PreparedStatement =>
  db.prepare(CALLERS(tenant)).bind(JSON.stringify(keyHashes));
export function callersOf(result: D1Result<unknown> | undefined): Map<string, Caller> {
  const rows = new Map<string, CallerRow[]>();
  for (const row of rowsOf<CallerRow & { key_hash: string }>(result))
    rows.set(row.key_hash, [...(rows.get(row.key_hash) ?? []), row]);
  return new Map([...rows].map(([keyHash, held]) => [keyHash, toCaller(held) as Caller]));
}

/** The caller behind a key hash among `tenant`'s users: a statement to batch with others, and how to read it. */
export const callerStatement = (db: D1, keyHash: string, tenant: number): D1PreparedStatement =>
  db.prepare(CALLER(tenant)).bind(keyHash);
export const callerOf = (result: D1Result<unknown> | undefined): Caller | undefined => toCaller(rowsOf(result));

/** A user as a caller (by id, not by key: work done for them in the background); none once deleted. */
export const userStatement = (db: D1, userId: number): D1PreparedStatement =>
  db
    .prepare(
      `SELECT u.id AS user_id, m.workspace_id, m.role, m.role_id, ro.objects AS role_objects FROM users u
       LEFT JOIN memberships m ON m.user_id = u.id LEFT JOIN roles ro ON ro.id = m.role_id
       WHERE u.id = ? AND ${HERE('u.id')}`,
    )
    .bind(userId);

/** The current definitions of `tenant`'s objects whose ids are in the JSON array bound to `?`. */
export const OBJECTS = (tenant: number): string => `SELECT v.object_id AS id, v.version, v.name, v.name_template,
    v.fields, v.workspace_ids
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE o.id IN (${tenantIds('?', tenant)})`;

const OBJECTS_OF_RECORDS = (tenant: number): string => `SELECT v.object_id AS id, v.version, v.name,
    v.name_template, v.fields, v.workspace_ids
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE o.id IN (SELECT object_id FROM records WHERE id IN (${tenantIds('?', tenant)}))`;

/** A record's columns and its sharing, as recordsOf() reads them; `r` is the records table. */
/** A page's body stops before it passes this many bytes (always at least one item). */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * A page statement that reads records in full only while they fit a page: `from` (`FROM …
 * WHERE …`, records `r`) gives the candidates in the page's order, at most `limit` of them; their sizes
 * are read first (`octet_length` reads no value), and only those that start within MAX_PAGE_BYTES
 * are read whole. `extras` are columns of each row, computed with the candidates (`[expression,
 * name]`). Each row also has `size_cut`: 1 when the rows end there because of their size.
 */
export function sizedPage(from: string, extras: readonly [string, string][] = [], limit = '?3'): string {
  const inner = extras.map(([expression, name]) => `, ${expression} AS ${name}`).join('');
  const outer = extras.map(([, name]) => `, m.${name}`).join('');
  return `SELECT ${RECORD_COLUMNS}${outer}, m.before + m.size > ${MAX_PAGE_BYTES} AS size_cut FROM (
      SELECT p.*, coalesce(sum(p.size) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before FROM (
        SELECT r.id AS id, octet_length(r.field_values) + octet_length(r.name) AS size${inner}
        ${from} LIMIT ${limit}) p) m
    CROSS JOIN records r ON r.id = m.id
    WHERE m.before <= ${MAX_PAGE_BYTES}`;
}

/** The workspaces record `r` is shared with, as a JSON array in id order. */
const SHARED_WORKSPACES = `(SELECT json_group_array(workspace_id) FROM
    (SELECT workspace_id FROM record_workspaces WHERE record_id = r.id ORDER BY workspace_id)) AS shared_workspace_ids`;

// The columns a record's JSON is made of, and no more: its search keys and folds (as long as its
// values, for a record of text) are for SQL to compare, never for an answer.
export const RECORD_COLUMNS = `r.id, r.object_id, r.object_version, r.name, r.field_values, r.creation_type, r.version,
  r.deleted, r.owned_by, r.created_at, r.created_by, r.updated_at, r.updated_by, r.is_template,
  r.folds IS NOT NULL AS keyed, ${SHARED_WORKSPACES},
  CASE WHEN EXISTS (SELECT 1 FROM reference_targets WHERE target = r.object_id) THEN (SELECT
    json_group_object(field, value) FROM record_index WHERE record_id = r.id AND role = 4) END AS rollups`;

const RECORDS = (tenant: number): string =>
  `SELECT ${RECORD_COLUMNS} FROM records r WHERE r.id IN (${tenantIds('?', tenant)})`;

/**
 * SQL: the rules `rules` (a defined role's JSON, or NULL for `viewer` and `editor`) let user `user`
 * read record `record` (`r` unless named): its object is listed as readable, and for `own` rows the
 * user owns it.
 */
export const ROLE_READS = (rules: string, user: string, record = 'r'): string => `(${rules} IS NULL OR EXISTS (
    SELECT 1 FROM json_each(${rules}) j WHERE j.value ->> '$.objectId' = ${record}.object_id AND j.value ->> '$.read'
      AND (j.value ->> '$.rows' = 'all' OR ${record}.owned_by = ${user})))`;

/**
 * SQL: the caller (key hash `?2`) is a member of a workspace record `r` is shared with (`?3` alone,
 * when not null) whose role lets them read it.
 */
const CALLER_READS = `EXISTS (SELECT 1 FROM record_workspaces rw
    JOIN memberships m ON m.workspace_id = rw.workspace_id JOIN api_keys k ON k.user_id = m.user_id
    LEFT JOIN roles ro ON ro.id = m.role_id
    WHERE rw.record_id = r.id AND k.key_hash = ?2 AND (?3 IS NULL OR rw.workspace_id = ?3)
      AND ${ROLE_READS('ro.objects', 'm.user_id')})`;

/**
 * SQL: the rules of the defined role the caller (key hash `key`) holds in workspace `workspace`,
 * NULL for a built-in role (or none: the route checks membership). Not correlated with any row, it
 * is read once for a statement.
 */
export const MEMBER_RULES = (key: string, workspace: string): string =>
  `(SELECT ro.objects FROM api_keys k JOIN memberships m ON m.user_id = k.user_id
    JOIN roles ro ON ro.id = m.role_id WHERE k.key_hash = ${key} AND m.workspace_id = ${workspace})`;

/** SQL: the caller (key hash `key`) may read record `r` of workspace `workspace` as their role there says. */
export const MEMBER_READS = (key: string, workspace: string): string =>
  ROLE_READS(MEMBER_RULES(key, workspace), `(SELECT k.user_id FROM api_keys k WHERE k.key_hash = ${key})`);

/** SQL: the caller's role in `workspace` hides the field named `field` (an SQL text) of record `r`'s object. */
export const MEMBER_HIDES = (key: string, workspace: string, field: string): string => {
  const rules = MEMBER_RULES(key, workspace);
  return `(${rules} IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(${rules}) j
    WHERE j.value ->> '$.objectId' = r.object_id AND json_extract(j.value, '$.fields.' || ${field}) = 'hidden'))`;
};

/**
 * The records `?1` names that the caller may read. One the caller may not read is refused on its id
 * and sharing before its values are read, so it costs what a missing one costs, whatever its size.
 */
const READABLE = (tenant: number): string =>
  `SELECT ${RECORD_COLUMNS} FROM records r WHERE r.id IN (${tenantIds('?1', tenant)}) AND ${CALLER_READS}`;

/** What a page about a record needs of it, without its values or name: where it stands, and its version. */
export type RecordStanding = Pick<RecordOut, 'id' | 'objectId' | 'ownedBy' | 'sharedWorkspaceIds' | 'version'>;

/** Where the records `?1` names stand, for a caller (key hash `?2`) who may read them; nothing of others. */
const STANDINGS = (tenant: number): string => `SELECT r.id, r.object_id, r.owned_by, r.version, ${SHARED_WORKSPACES}
  FROM records r WHERE r.id IN (${tenantIds('?1', tenant)}) AND ${CALLER_READS}`;

interface StandingRow {
  id: number;
  object_id: number;
  owned_by: number | null;
  version: number;
  shared_workspace_ids: string;
}

export class Store {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
    /** The tenant the request was routed to: no row of another is read. */
    private readonly tenant: number,
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
  async createContext(
    keyHash: string,
    objectIds: readonly number[],
  ): Promise<{ caller: Caller | undefined; objects: Map<number, ObjectDef> }> {
    const [callers, objects] = await this.batch<unknown>([
      callerStatement(this.db, keyHash, this.tenant),
      this.db.prepare(OBJECTS(this.tenant)).bind(JSON.stringify(objectIds)),
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
      callerStatement(this.db, keyHash, this.tenant),
      this.db.prepare(RECORDS(this.tenant)).bind(ids),
      this.db.prepare(OBJECTS_OF_RECORDS(this.tenant)).bind(ids),
    ]);
    return {
      caller: toCaller(rowsOf(callers)),
      records: recordMap(rowsOf(records)),
      objects: objectMap(rowsOf(objects)),
    };
  }

  /**
   * The caller behind a key hash, the record `recordId` if the caller may read it (under
   * `workspaceId` when given) and its object's definition, in one round trip: a record the caller
   * may not read is not read at all.
   */
  async readableRecord(keyHash: string, recordId: number, workspaceId: number | undefined): Promise<RecordContext> {
    const ids = JSON.stringify([recordId]);
    const [callers, records, objects] = await this.batch<unknown>([
      callerStatement(this.db, keyHash, this.tenant),
      this.db.prepare(READABLE(this.tenant)).bind(ids, keyHash, workspaceId ?? null),
      this.db.prepare(OBJECTS_OF_RECORDS(this.tenant)).bind(ids),
    ]);
    return {
      caller: toCaller(rowsOf(callers)),
      records: recordMap(rowsOf(records)),
      objects: objectMap(rowsOf(objects)),
    };
  }

  /**
   * The caller behind a key hash and where a record stands if the caller may read it, in one round
   * trip, never reading its values: a record the caller may not read is decided on by its id and
   * sharing alone, at the same cost whatever its size.
   */
  async recordStanding(
    keyHash: string,
    recordId: number,
  ): Promise<{ caller: Caller | undefined; standing: RecordStanding | undefined }> {
    const [callers, standings] = await this.batch<unknown>([
      callerStatement(this.db, keyHash, this.tenant),
      this.db.prepare(STANDINGS(this.tenant)).bind(JSON.stringify([recordId]), keyHash, null),
    ]);
    const row = rowsOf<StandingRow>(standings)[0];
    return {
      caller: toCaller(rowsOf(callers)),
      standing:
        row === undefined
          ? undefined
          : {
              id: row.id,
              objectId: row.object_id,
              ownedBy: row.owned_by,
              version: row.version,
              sharedWorkspaceIds: JSON.parse(row.shared_workspace_ids) as number[],
            },
    };
  }

  /** The user behind a key hash, whether they administer their tenant, and their workspaces by id with names. */
  async profile(keyHash: string): Promise<Profile | undefined> {
    const rows = await this.all<ProfileRow>(this.db.prepare(PROFILE(this.tenant)).bind(keyHash));
    const first = rows[0];
    if (first === undefined) return undefined;
    const workspaces = rows.flatMap(
      ({ workspace_id, workspace_name, role, role_id, role_objects }): ProfileWorkspace[] => {
        if (workspace_id === null || workspace_name === null || role === null) return [];
        const at = { workspaceId: workspace_id, name: workspace_name };
        return role_id === null || role_objects === null
          ? [{ ...at, role }]
          : [{ ...at, roleId: role_id, objects: JSON.parse(role_objects) as ObjectRule[] }];
      },
    );
    return { userId: first.user_id, name: first.name, admin: first.admin === 1, workspaces };
  }

  /** The stored state of records, e.g. after a write lost to a concurrent one. */
  async getRecords(recordIds: readonly number[]): Promise<Map<number, RecordOut>> {
    const ids = JSON.stringify(recordIds);
    return recordMap(await this.all<RecordReadRow>(this.db.prepare(RECORDS(this.tenant)).bind(ids)));
  }

  async ping(): Promise<boolean> {
    const rows = await this.all<{ ok: number }>(this.db.prepare('SELECT 1 AS ok'));
    return rows[0]?.ok === 1;
  }
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
  return rows.map((row) => {
    const record = toRecord(row, JSON.parse(row.shared_workspace_ids) as number[]);
    if (row.keyed === 1) keyedRecords.add(record);
    // Only a record of an object some reference field targets can have rollups.
    if (typeof row.rollups === 'string' && row.rollups !== '{}')
      rollupsRead.set(record, JSON.parse(row.rollups) as Record<string, unknown>);
    return record;
  });
}

/**
 * Defined roles as read, by id and text: the callers of one role share its parsed rules (and a
 * caller's memory holds them without parsing the same JSON for every request).
 */
const definedRoles = {
  parsed: new Map<number, { text: string; grant: Grant }>(),
  get(id: number, text: string | null): Grant | undefined {
    if (text === null) return undefined;
    const known = this.parsed.get(id);
    if (known?.text === text) return known.grant;
    const grant: Grant = { id, objects: JSON.parse(text) as ObjectRule[] };
    if (this.parsed.size >= 1_000) this.parsed.clear();
    this.parsed.set(id, { text, grant });
    return grant;
  },
};

function toCaller(rows: readonly CallerRow[]): Caller | undefined {
  const first = rows[0];
  if (first === undefined) return undefined;
  const roles = new Map<number, Grant>();
  for (const row of rows) {
    if (row.workspace_id === null || row.role === null) continue;
    // A membership naming a role that could not be read grants nothing (it never falls back to `viewer`).
    const defined =
      row.role_id === null
        ? undefined
        : (definedRoles.get(row.role_id, row.role_objects) ?? { id: row.role_id, objects: [] });
    roles.set(row.workspace_id, defined ?? row.role);
  }
  return { userId: first.user_id, roles };
}

export function toObjectDef(row: ObjectRow): ObjectDef {
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

/** The one serialization of a record: it is identical wherever it appears. */
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

/** The current definitions of the objects shared with workspace ?, with the fields whose index is being built. */
export const OBJECTS_IN_VIEW = `SELECT v.object_id AS id, v.version, v.name, v.name_template, v.fields, v.workspace_ids,
    (SELECT json_group_array(b.field) FROM index_builds b WHERE b.object_id = o.id) AS building
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE EXISTS (SELECT 1 FROM json_each(v.workspace_ids) j WHERE j.value = ?)`;
