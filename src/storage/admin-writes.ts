import type { LedgerOutcome } from '../core/ledger.ts';
import type { ObjectRule, Role } from '../domain/access.ts';
import { TENANT_BLOCK } from '../domain/tenant.ts';
import type { KeyClaim } from './idempotency.ts';
import type { Meter } from './meter.ts';
import { RecordWrites } from './writes.ts';
import { reindexObject } from './record-index.ts';
import { nextId } from './sequences.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import type { D1 } from './sessions.ts';

/**
 * The writes of the admin API, exactly once. Each is one D1 batch whose first statement inserts
 * its write id into the ledger (`writes`) with its outcome: the answer (status and body) or the
 * failure it was answered. An outcome that depends on an id D1 assigns (a new user, workspace,
 * object or key) is completed by the batch's last write, once the id exists. A batch sent again
 * after a lost reply fails on the ledger row before it changes anything, and the answer is read
 * from that row instead: a retry never creates a second user or reports a deleted one missing.
 * A completed Idempotency-Key names the write's ledger row.
 */

/** How an admin write ended: its answer as the ledger holds it, or the failure status it was answered. */
export type AdminOutcome = { status: number; body: string } | { failed: number };

/** The batch of one admin write: the ledger row first, its effects, what completes the ledger row. */
export interface AdminBatch {
  ledger: D1PreparedStatement;
  effects: D1PreparedStatement[];
  complete?: D1PreparedStatement;
}

/** The scope of the admin's Idempotency-Keys: no user has this id. */
export const ADMIN_KEY_SCOPE = -1;

/** The answer a create's batch completes around the id D1 assigns: `{"id":<id>` + `rest`. */
export const PENDING = '{"f":500}';

export const answer = (status: number, body: string): string => JSON.stringify({ a: { status, body } });

export const LEDGER = 'INSERT INTO writes (id, outcome) VALUES (?1, ?2)';
// The ledger row of a write whose outcome is known before it runs: `?2` when `?3` holds, else 404.
export const LEDGER_IF = (condition: string): string =>
  `INSERT INTO writes (id, outcome) SELECT ?1, CASE WHEN ${condition} THEN ?2 ELSE '{"f":404}' END`;
// Completes a pending ledger row with the answer around the id `?2` selects: `{"id":<id>` + `?3`.
const COMPLETE = (idSql: string): string =>
  `UPDATE writes SET outcome = json_object('a', json_object('status', ?2, 'body', '{"id":' || (${idSql}) || ?3))
   WHERE id = ?1 AND outcome = '${PENDING}'`;
const OUTCOME = 'SELECT outcome FROM writes WHERE id = ?';
// A keyed write that succeeded completes its key in the same batch; a failure leaves the claim,
// which is given back. `token` is NOT NULL: a write whose claim was taken over aborts here.
const KEY_DONE = `INSERT INTO idempotency_keys (user_id, method, path, key, fingerprint, token, state, status,
  headers, write_id, shape, created_at, lease_until)
  SELECT ?1, ?2, ?3, ?4, ?5, ?6, 'done', w.outcome ->> '$.a.status',
    iif(w.outcome ->> '$.a.status' = 204, '{}', '{"Content-Type":"application/json"}'), ?7, 'answer', ?8, ?8
  FROM writes w WHERE w.id = ?7 AND w.outcome ->> '$.a' IS NOT NULL
  ON CONFLICT (user_id, key, method, path) DO UPDATE SET state = 'done', status = excluded.status,
    headers = excluded.headers, write_id = excluded.write_id, shape = excluded.shape, body = NULL,
    token = CASE WHEN idempotency_keys.token = excluded.token THEN excluded.token END`;

/** Object ids whose current version lists the workspace `?2`. */
const LISTING = `SELECT o.id FROM objects o
  JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE EXISTS (SELECT 1 FROM json_each(v.workspace_ids) j WHERE j.value = ?2)`;
const UNUSED = `NOT EXISTS (${LISTING}) AND NOT EXISTS (SELECT 1 FROM record_workspaces WHERE workspace_id = ?2)`;

/** The body of a create's answer after its `{"id":<id>` opening; `id` must be the first member of `body`. */
export function afterId(body: Record<string, unknown>): string {
  const text = JSON.stringify({ ...body, id: 0 });
  if (!text.startsWith('{"id":0')) throw new Error('the id must come first');
  return text.slice('{"id":0'.length);
}

export class AdminWrites {
  private readonly writes: RecordWrites;

  /** `tenant`: whose entities are written, in the block of ids that is its own. */
  constructor(
    private readonly db: D1,
    meter: Meter,
    private readonly tenant: number,
  ) {
    this.writes = new RecordWrites(db, meter);
  }

  /** SQL: row `id` is of the tenant's block. */
  private get ofTenant(): string {
    return `id / ${TENANT_BLOCK} = ${this.tenant - 1}`;
  }

  /** A new user: `{"id","name"}` (and `"admin":true` for an administrator of the tenant). */
  createUser(writeId: string, name: string, now: number, admin = false): AdminBatch {
    const { take, id } = nextId(this.db, 'users', this.tenant);
    return {
      ledger: this.db.prepare(LEDGER).bind(writeId, PENDING),
      effects: [
        take,
        this.db
          .prepare(`INSERT INTO users (id, name, created_at, admin) VALUES (${id}, ?, ?, ?)`)
          .bind(name, now, admin ? 1 : 0),
      ],
      complete: this.db
        .prepare(COMPLETE(`SELECT ${id}`))
        .bind(writeId, 201, afterId(admin ? { id: 0, name, admin: true } : { id: 0, name })),
    };
  }

  /**
   * A new tenant in the catalog (on DB): `{"id","name","database","status","createdAt",…}`, where
   * `rest` is the answer after its id (the catalog never deletes a row: its newest is the highest).
   */
  createTenant(writeId: string, catalog: Catalog, name: string, database: string, rest: string, now: number) {
    return {
      ledger: this.db.prepare(LEDGER).bind(writeId, PENDING),
      effects: [catalog.insert(name, database, now)],
      complete: this.db.prepare(COMPLETE('SELECT max(id) FROM tenants')).bind(writeId, 201, rest),
    } satisfies AdminBatch;
  }

  /** A tenant's first user, an administrator, and their key (its hash and prefix): `{"id"}` of the user. */
  firstAdministrator(writeId: string, keyHash: string, prefix: string, now: number): AdminBatch {
    const user = nextId(this.db, 'users', this.tenant);
    const key = nextId(this.db, 'api_keys', this.tenant);
    return {
      ledger: this.db.prepare(LEDGER).bind(writeId, PENDING),
      effects: [
        user.take,
        this.db
          .prepare(`INSERT INTO users (id, name, created_at, admin) VALUES (${user.id}, 'administrator', ?, 1)`)
          .bind(now),
        key.take,
        this.db
          .prepare(
            `INSERT INTO api_keys (id, key_hash, prefix, user_id, created_at) VALUES (${key.id}, ?, ?, ${user.id}, ?)`,
          )
          .bind(keyHash, prefix, now),
      ],
      complete: this.db.prepare(COMPLETE(`SELECT ${user.id}`)).bind(writeId, 201, afterId({ id: 0 })),
    };
  }

  /** A new workspace: `{"id","name"}`. */
  createWorkspace(writeId: string, name: string, now: number): AdminBatch {
    const { take, id } = nextId(this.db, 'workspaces', this.tenant);
    return {
      ledger: this.db.prepare(LEDGER).bind(writeId, PENDING),
      effects: [
        take,
        this.db.prepare(`INSERT INTO workspaces (id, name, created_at) VALUES (${id}, ?, ?)`).bind(name, now),
      ],
      complete: this.db.prepare(COMPLETE(`SELECT ${id}`)).bind(writeId, 201, afterId({ id: 0, name })),
    };
  }

  /** A user's new key (its hash and prefix); `rest` is the answer after its id. 404 without the user. */
  createKey(writeId: string, userId: number, keyHash: string, prefix: string, rest: string, now: number): AdminBatch {
    const { take, id } = nextId(this.db, 'api_keys', this.tenant);
    return {
      ledger: this.db.prepare(LEDGER_IF('EXISTS (SELECT 1 FROM users WHERE id = ?3)')).bind(writeId, PENDING, userId),
      effects: [
        take,
        this.db
          .prepare(
            `INSERT INTO api_keys (id, key_hash, prefix, user_id, created_at)
             SELECT ${id}, ?, ?, id, ? FROM users WHERE id = ?`,
          )
          .bind(keyHash, prefix, now, userId),
      ],
      complete: this.db.prepare(COMPLETE(`SELECT ${id}`)).bind(writeId, 201, rest),
    };
  }

  /** Revokes a key; the batch's second result holds its hash. 404 without the key. */
  revokeKey(writeId: string, keyId: number): AdminBatch {
    return {
      ledger: this.db
        .prepare(LEDGER_IF('EXISTS (SELECT 1 FROM api_keys WHERE id = ?3)'))
        .bind(writeId, answer(204, ''), keyId),
      effects: [this.db.prepare('DELETE FROM api_keys WHERE id = ? RETURNING key_hash').bind(keyId)],
    };
  }

  /**
   * Deletes a user with their keys and memberships; the batch's second result holds the hashes
   * of the keys it revoked. Records keep the user's id: they hold it as a plain number.
   */
  deleteUser(writeId: string, userId: number): AdminBatch {
    return {
      ledger: this.db
        .prepare(LEDGER_IF('EXISTS (SELECT 1 FROM users WHERE id = ?3)'))
        .bind(writeId, answer(204, ''), userId),
      effects: [
        this.db.prepare('DELETE FROM api_keys WHERE user_id = ? RETURNING key_hash').bind(userId),
        this.db.prepare('DELETE FROM memberships WHERE user_id = ?').bind(userId),
        this.db.prepare('DELETE FROM users WHERE id = ?').bind(userId),
      ],
    };
  }

  /**
   * Deletes a workspace and its memberships when nothing keeps it (no current object definition
   * lists it, no record is shared with it), 409 when something does, 404 when there is none:
   * decided in the same D1 transaction as the deletes. A definition saved at the same moment may
   * still name it, since saving one checks its workspaces in a read of its own.
   */
  deleteWorkspace(writeId: string, workspaceId: number): AdminBatch {
    return {
      ledger: this.db
        .prepare(
          `INSERT INTO writes (id, outcome) SELECT ?1, CASE
             WHEN NOT EXISTS (SELECT 1 FROM workspaces WHERE id = ?2) THEN '{"f":404}'
             WHEN ${UNUSED} THEN ?3 ELSE '{"f":409}' END`,
        )
        .bind(writeId, workspaceId, answer(204, '')),
      effects: [
        this.db
          .prepare(`DELETE FROM memberships WHERE workspace_id = ?1 AND ${UNUSED.replaceAll('?2', '?1')}`)
          .bind(workspaceId),
        this.db.prepare(`DELETE FROM workspaces WHERE id = ?1 AND ${UNUSED.replaceAll('?2', '?1')}`).bind(workspaceId),
      ],
    };
  }

  /**
   * What keeps a workspace from being deleted: the objects whose current version lists it, and
   * whether records are shared with it.
   */
  async workspaceInUse(workspaceId: number): Promise<{ objectIds: number[]; hasRecords: boolean }> {
    const [objects, records] = await this.db.batch<unknown>([
      this.db.prepare(`${LISTING.replaceAll('?2', '?1')} ORDER BY o.id LIMIT 100`).bind(workspaceId),
      this.db
        .prepare('SELECT EXISTS (SELECT 1 FROM record_workspaces WHERE workspace_id = ?) AS shared')
        .bind(workspaceId),
    ]);
    return {
      objectIds: (objects?.results as { id: number }[]).map((row) => row.id),
      hasRecords: (records?.results[0] as { shared: number } | undefined)?.shared === 1,
    };
  }

  /**
   * Sets a membership's role, built-in or defined: `{"workspaceId","userId","role"}` or `…"roleId"}`;
   * 404 when the workspace or the user does not exist, 422 when the defined role does not.
   */
  putMember(writeId: string, workspaceId: number, userId: number, grant: { role: Role } | { roleId: number }) {
    const roleId = 'roleId' in grant ? grant.roleId : null;
    const body = JSON.stringify({ workspaceId, userId, ...grant });
    return {
      ledger: this.db
        .prepare(
          `INSERT INTO writes (id, outcome) SELECT ?1, CASE
             WHEN NOT EXISTS (SELECT 1 FROM workspaces WHERE id = ?3) OR NOT EXISTS (SELECT 1 FROM users WHERE id = ?4)
               THEN '{"f":404}'
             WHEN ?5 IS NOT NULL AND NOT EXISTS (SELECT 1 FROM roles WHERE id = ?5) THEN '{"f":422}'
             ELSE ?2 END`,
        )
        .bind(writeId, answer(200, body), workspaceId, userId, roleId),
      effects: [
        this.db
          .prepare(
            `INSERT INTO memberships (workspace_id, user_id, role, role_id)
             SELECT w.id, u.id, ?3, ?4 FROM workspaces w, users u WHERE w.id = ?1 AND u.id = ?2
               AND (?4 IS NULL OR EXISTS (SELECT 1 FROM roles WHERE id = ?4))
             ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role, role_id = excluded.role_id`,
          )
          .bind(workspaceId, userId, 'role' in grant ? grant.role : 'viewer', roleId),
      ],
    } satisfies AdminBatch;
  }

  /** A new role: `{"id","name","objects"}`; 409 when the tenant has a role of that name. */
  createRole(writeId: string, name: string, rules: readonly ObjectRule[], now: number): AdminBatch {
    const { take, id } = nextId(this.db, 'roles', this.tenant);
    const taken = (name: string): string => `EXISTS (SELECT 1 FROM roles WHERE ${this.ofTenant} AND name = ${name})`;
    return {
      ledger: this.db
        .prepare(`INSERT INTO writes (id, outcome) SELECT ?1, CASE WHEN ${taken('?3')} THEN '{"f":409}' ELSE ?2 END`)
        .bind(writeId, PENDING, name),
      effects: [
        take,
        this.db
          .prepare(
            `INSERT INTO roles (id, name, objects, created_at, updated_at)
             SELECT ${id}, ?1, ?2, ?3, ?3 WHERE NOT ${taken('?1')}`,
          )
          .bind(name, JSON.stringify(rules), now),
      ],
      complete: this.db.prepare(COMPLETE(`SELECT ${id}`)).bind(writeId, 201, afterId({ id: 0, name, objects: rules })),
    };
  }

  /** Replaces a role: `{"id","name","objects"}`; 404 without it, 409 when another role has the name. */
  updateRole(writeId: string, roleId: number, name: string, rules: readonly ObjectRule[], now: number): AdminBatch {
    const taken = (name: string, id: string): string =>
      `EXISTS (SELECT 1 FROM roles WHERE ${this.ofTenant} AND name = ${name} AND id <> ${id})`;
    return {
      ledger: this.db
        .prepare(
          `INSERT INTO writes (id, outcome) SELECT ?1, CASE
             WHEN NOT EXISTS (SELECT 1 FROM roles WHERE id = ?4) THEN '{"f":404}'
             WHEN ${taken('?3', '?4')} THEN '{"f":409}' ELSE ?2 END`,
        )
        .bind(writeId, answer(200, JSON.stringify({ id: roleId, name, objects: rules })), name, roleId),
      effects: [
        this.db
          .prepare(
            `UPDATE roles SET name = ?1, objects = ?3, updated_at = ?4 WHERE id = ?2 AND NOT ${taken('?1', '?2')}`,
          )
          .bind(name, roleId, JSON.stringify(rules), now),
      ],
    };
  }

  /** Deletes a role; 404 without it, 409 while a membership gives it. */
  deleteRole(writeId: string, roleId: number): AdminBatch {
    const used = 'EXISTS (SELECT 1 FROM memberships WHERE role_id = ?2)';
    return {
      ledger: this.db
        .prepare(
          `INSERT INTO writes (id, outcome) SELECT ?1, CASE
             WHEN NOT EXISTS (SELECT 1 FROM roles WHERE id = ?2) THEN '{"f":404}'
             WHEN ${used} THEN '{"f":409}' ELSE ?3 END`,
        )
        .bind(writeId, roleId, answer(204, '')),
      effects: [this.db.prepare(`DELETE FROM roles WHERE id = ?1 AND NOT ${used.replace('?2', '?1')}`).bind(roleId)],
    };
  }

  /** Removes a membership (if any); 404 when the workspace or the user does not exist. */
  deleteMember(writeId: string, workspaceId: number, userId: number): AdminBatch {
    return {
      ledger: this.db
        .prepare(
          LEDGER_IF('EXISTS (SELECT 1 FROM workspaces WHERE id = ?3) AND EXISTS (SELECT 1 FROM users WHERE id = ?4)'),
        )
        .bind(writeId, answer(204, ''), workspaceId, userId),
      effects: [
        this.db.prepare('DELETE FROM memberships WHERE workspace_id = ? AND user_id = ?').bind(workspaceId, userId),
      ],
    };
  }

  /** Creates an object with its version 1; `rest` is the answer after its id. */
  createObject(writeId: string, version: DefinitionColumns, rest: string, now: number): AdminBatch {
    const { take, id } = nextId(this.db, 'objects', this.tenant);
    return {
      ledger: this.db.prepare(LEDGER).bind(writeId, PENDING),
      effects: [
        take,
        this.db.prepare(`INSERT INTO objects (id, current_version) VALUES (${id}, 1)`),
        this.insertVersion(id, version, now),
      ],
      complete: this.db.prepare(COMPLETE(`SELECT ${id}`)).bind(writeId, 201, rest),
    };
  }

  /**
   * Adds the next version of an existing object (404 when there is none). The answer is
   * `opening` + the new version + `rest`: the version is known only in SQL.
   */
  updateObject(
    writeId: string,
    id: number,
    version: DefinitionColumns,
    answerAround: { opening: string; rest: string },
    now: number,
  ): AdminBatch {
    return {
      ledger: this.db.prepare(LEDGER_IF('EXISTS (SELECT 1 FROM objects WHERE id = ?3)')).bind(writeId, PENDING, id),
      effects: [
        this.db.prepare('UPDATE objects SET current_version = current_version + 1 WHERE id = ?').bind(id),
        this.insertVersion('?', version, now, id),
        // The index follows the new version's indexed fields (or notes the builds now due).
        ...reindexObject(this.db, id, now),
      ],
      complete: this.db
        .prepare(
          `UPDATE writes SET outcome = json_object('a', json_object('status', 200,
             'body', ?2 || (SELECT current_version FROM objects WHERE id = ?3) || ?4))
           WHERE id = ?1 AND outcome = '${PENDING}'`,
        )
        .bind(writeId, answerAround.opening, id, answerAround.rest),
    };
  }

  private insertVersion(
    objectId: string,
    version: DefinitionColumns,
    now: number,
    ...idParam: number[]
  ): D1PreparedStatement {
    return this.db
      .prepare(
        `INSERT INTO object_versions (object_id, version, name, name_template, fields, workspace_ids, created_at)
         SELECT id, current_version, ?, ?, ?, ?, ? FROM objects WHERE id = ${objectId}`,
      )
      .bind(version.name, version.nameTemplate, version.fields, version.workspaceIds, now, ...idParam);
  }

  /**
   * Commits one admin write: its ledger row first, its effects, what completes the row, the
   * Idempotency-Key it completes (when it succeeds), then a read of the row. Sent again after a
   * transient failure until `deadline` (a repeat of a committed write fails on its ledger row
   * and reads it instead). Returns the outcome and, when this attempt committed, the results of
   * the effects (from the batch's second statement on).
   */
  async commit(
    writeId: string,
    batch: AdminBatch,
    claim: KeyClaim | undefined,
    now: number,
    deadline: number,
  ): Promise<{ outcome: AdminOutcome; effects?: D1Result[] }> {
    const statements = [
      batch.ledger,
      ...batch.effects,
      ...(batch.complete === undefined ? [] : [batch.complete]),
      ...(claim === undefined ? [] : [this.keyDone(claim, writeId, now)]),
      this.db.prepare(OUTCOME).bind(writeId),
    ];
    const result = await this.writes.commit(statements, [writeId], deadline);
    if ('committed' in result) {
      const row = result.committed.at(-1)?.results[0] as { outcome: string } | undefined;
      if (row === undefined) throw new Error('an admin write left no ledger row');
      return {
        outcome: adminOutcome(JSON.parse(row.outcome) as LedgerOutcome),
        effects: result.committed.slice(1, 1 + batch.effects.length),
      };
    }
    const outcome = result.finished.get(writeId);
    if (outcome === undefined) throw new Error('an admin write id is finished by another write');
    return { outcome: adminOutcome(outcome) };
  }

  /** What the ledger holds for a finished admin write (a completed key's replay). */
  async outcome(writeId: string, deadline: number): Promise<AdminOutcome | undefined> {
    const outcome = (await this.writes.outcomes([writeId], deadline)).get(writeId);
    return outcome === undefined ? undefined : adminOutcome(outcome);
  }

  private keyDone(claim: KeyClaim, writeId: string, now: number): D1PreparedStatement {
    return this.db
      .prepare(KEY_DONE)
      .bind(claim.userId, claim.method, claim.path, claim.key, claim.fingerprint, claim.token, writeId, now);
  }
}

/** A definition's version as its columns store it. */
export interface DefinitionColumns {
  name: string;
  nameTemplate: string | null;
  /** JSON text. */
  fields: string;
  /** JSON text: ascending, without repeats. */
  workspaceIds: string;
}

function adminOutcome(outcome: LedgerOutcome): AdminOutcome {
  if ('a' in outcome) return outcome.a;
  if ('f' in outcome) return { failed: outcome.f };
  throw new Error('an admin write id names a record write');
}
