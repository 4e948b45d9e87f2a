import type { Meter } from '../storage/meter.ts';
import { retrying } from '../storage/retry.ts';
import type { D1 } from '../storage/sessions.ts';
import { ofTenant, TENANT_TABLES, type TenantTable } from './tenant-tables.ts';

/**
 * A tenant's rows copied from the database it leaves (`source`) to the one it moves to (`target`),
 * as they are, ids and derived rows included. Rows travel as JSON text that SQL writes and reads
 * (`json_object`, `->>`), so every value keeps its type (D1 would bind a number as a REAL) and a
 * statement binds one value. Every step is an upsert of what the source holds now, so a step
 * repeated (a restart, a retry) copies the same rows again and changes nothing.
 */

/** Rows a bulk chunk reads at most, and the characters it stops after. */
const CHUNK_ROWS = 500;
const CHUNK_CHARS = 4_000_000;
/** Log entries a catch-up round takes. */
const LOG_ROWS = 100;
/** Characters of rows one statement writes (D1 takes 2,000,000 bytes a value). */
const STATEMENT_CHARS = 600_000;

const list = (columns: readonly string[], prefix = ''): string => columns.map((c) => `${prefix}${c}`).join(', ');
const rowJson = (t: TenantTable): string => `json_object(${t.columns.map((c) => `'${c}', ${c}`).join(', ')})`;
/** The `i`th part of a JSON key array bound (or named) as `param`. */
const keyPart = (param: string, i: number): string => `json_extract(${param}, '$[${i}]')`;
const keyOf = (t: TenantTable, param: string): string =>
  t.key.length === 1 ? keyPart(param, 0) : `(${t.key.map((_, i) => keyPart(param, i)).join(', ')})`;
const keyColumns = (t: TenantTable): string => (t.key.length === 1 ? (t.key[0] as string) : `(${list(t.key)})`);

/** Writes JSON rows of `t`, replacing what the target holds under the same key. */
function upsertSql(t: TenantTable): string {
  const others = t.columns.filter((c) => !t.key.includes(c));
  const update =
    others.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${others.map((c) => `${c} = excluded.${c}`).join(', ')}`;
  return `INSERT INTO ${t.table} (${list(t.columns)})
    SELECT ${t.columns.map((c) => `j.value ->> '$.${c}'`).join(', ')} FROM json_each(?1) j WHERE true
    ON CONFLICT (${list(t.key)}) ${update}`;
}

/** The same, for one row too big to share a statement: its values bound one by one. */
function upsertOneSql(t: TenantTable): string {
  const others = t.columns.filter((c) => !t.key.includes(c));
  const update =
    others.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${others.map((c) => `${c} = excluded.${c}`).join(', ')}`;
  return `INSERT INTO ${t.table} (${list(t.columns)}) VALUES (${t.columns.map(() => '?').join(', ')})
    ON CONFLICT (${list(t.key)}) ${update}`;
}

export interface CopiedChunk {
  rows: number;
  /** The key of the last row copied, or null once the table is done. */
  after: unknown[] | null;
}

export interface CaughtUp {
  /** Rows written or removed on the target. */
  rows: number;
  /** Whether the log may hold more. */
  more: boolean;
}

export class TenantCopy {
  constructor(
    private readonly source: D1,
    private readonly target: D1,
    private readonly meter: Meter,
    private readonly tenant: number,
    /** This step of the mover: the target takes writes from the step that claimed it last. */
    private readonly runner: string,
  ) {}

  /**
   * Fails the batch it starts unless this step is the one the target takes writes from (it
   * inserts a row that cannot be, else nothing).
   */
  private fence(): D1PreparedStatement {
    return this.target
      .prepare(
        `INSERT INTO arrivals (tenant_id, runner) SELECT ?1, NULL
         WHERE NOT EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = ?1 AND runner = ?2)`,
      )
      .bind(this.tenant, this.runner);
  }

  /** The statement that makes the target take the tenant's rows as they are, from this step. */
  private expecting(): D1PreparedStatement {
    return this.target
      .prepare(
        `INSERT INTO arrivals (tenant_id, runner) VALUES (?, ?)
         ON CONFLICT (tenant_id) DO UPDATE SET runner = excluded.runner`,
      )
      .bind(this.tenant, this.runner);
  }

  /** The target takes writes from this step from now on (while the tenant is arriving there). */
  async claim(): Promise<void> {
    const claim = this.target
      .prepare('UPDATE arrivals SET runner = ? WHERE tenant_id = ?')
      .bind(this.runner, this.tenant);
    await this.run(() => claim.run());
  }

  private run<T>(call: () => Promise<T>): Promise<T> {
    return retrying(() => this.meter.d1(call));
  }

  private batch(db: D1, statements: D1PreparedStatement[]): Promise<D1Result[]> {
    return statements.length === 0 ? Promise.resolve([]) : this.run(() => db.batch(statements));
  }

  /**
   * The start: the target takes the tenant's rows as they come (it forgets that the tenant once
   * left it), and the source logs every change of them from now on.
   */
  async begin(): Promise<void> {
    const { target, source, tenant } = this;
    await this.batch(target, [
      target.prepare('DELETE FROM departures WHERE tenant_id = ?').bind(tenant),
      target.prepare('DELETE FROM copying WHERE tenant_id = ?').bind(tenant),
      this.expecting(),
    ]);
    await this.batch(source, [
      source.prepare('DELETE FROM arrivals WHERE tenant_id = ?').bind(tenant),
      source
        .prepare(
          `INSERT INTO copying (tenant_id, state) VALUES (?, 'copying')
           ON CONFLICT (tenant_id) DO UPDATE SET state = 'copying'`,
        )
        .bind(tenant),
    ]);
  }

  /** Whether `db` holds any row of the tenant (a target must hold none before a copy starts). */
  async holdsAny(on: 'source' | 'target'): Promise<boolean> {
    const db = on === 'source' ? this.source : this.target;
    const found = await this.batch(
      db,
      TENANT_TABLES.map((t) => {
        const { where, values } = ofTenant(t, this.tenant);
        return db.prepare(`SELECT 1 FROM ${t.table} WHERE ${where} LIMIT 1`).bind(...values);
      }),
    );
    return found.some((result) => result.results.length > 0);
  }

  /** Copies the next rows of table `index` after the key `after` (null: from its start). */
  async copyChunk(index: number, after: readonly unknown[] | null): Promise<CopiedChunk> {
    const t = TENANT_TABLES[index];
    if (t === undefined) return { rows: 0, after: null };
    const order = list(t.key);
    const { where, values } = ofTenant(t, this.tenant);
    const from = after === null ? '' : `AND ${keyColumns(t)} > ${keyOf(t, '?3')}`;
    const read = this.source
      .prepare(
        `SELECT row, k FROM (
           SELECT row, k, rn, sum(length(row)) OVER (ORDER BY rn) - length(row) AS before FROM (
             SELECT ${rowJson(t)} AS row, json_array(${order}) AS k, row_number() OVER (ORDER BY ${order}) AS rn
             FROM ${t.table} WHERE ${where} ${from} ORDER BY ${order} LIMIT ${CHUNK_ROWS}))
         WHERE before < ${CHUNK_CHARS} ORDER BY rn`,
      )
      .bind(...values, ...(after === null ? [] : [JSON.stringify(after)]));
    const { results } = await this.run(() => read.all<{ row: string; k: string }>());
    const writes = this.writes(
      t,
      results.map((r) => r.row),
    );
    if (writes.length > 0) await this.batch(this.target, [this.fence(), ...writes]);
    const last = results.at(-1);
    // A chunk cut short by its size ends before the table does; one with fewer rows than asked ends it.
    const done = last === undefined || (results.length < CHUNK_ROWS && !(await this.more(t, last.k)));
    return { rows: results.length, after: done ? null : (JSON.parse(last.k) as unknown[]) };
  }

  /** Whether the tenant has rows of `t` after the key `k`. */
  private async more(t: TenantTable, k: string): Promise<boolean> {
    const { where, values } = ofTenant(t, this.tenant);
    const next = this.source
      .prepare(`SELECT 1 FROM ${t.table} WHERE ${where} AND ${keyColumns(t)} > ${keyOf(t, '?3')} LIMIT 1`)
      .bind(...values, k);
    return (await this.run(() => next.all())).results.length > 0;
  }

  /** Statements writing `rows` (JSON) of `t` to the target, a few hundred KB each. */
  private writes(t: TenantTable, rows: readonly string[]): D1PreparedStatement[] {
    const statements: D1PreparedStatement[] = [];
    let group: string[] = [];
    let size = 0;
    const flush = (): void => {
      if (group.length > 0) statements.push(this.target.prepare(upsertSql(t)).bind(`[${group.join(',')}]`));
      group = [];
      size = 0;
    };
    for (const row of rows) {
      if (row.length > STATEMENT_CHARS) {
        const values = JSON.parse(row) as Record<string, unknown>;
        statements.push(this.target.prepare(upsertOneSql(t)).bind(...t.columns.map((c) => values[c] ?? null)));
        continue;
      }
      if (size + row.length > STATEMENT_CHARS) flush();
      group.push(row);
      size += row.length;
    }
    flush();
    return statements;
  }

  /** How many changes the source's log holds for the tenant. */
  async pending(): Promise<number> {
    const count = this.source.prepare('SELECT count(*) AS n FROM copy_log WHERE tenant_id = ?').bind(this.tenant);
    const { results } = await this.run(() => count.all<{ n: number }>());
    return results[0]?.n ?? 0;
  }

  /**
   * One round of the catch-up: the next entries of the log, each row read again from the source
   * and written to the target as it is now (or removed there, gone from the source), in one batch
   * (parents first, removals children first); then those entries leave the log. `copied`: the
   * table the bulk copy is at (the tables before it are copied whole).
   */
  async catchUp(copied = TENANT_TABLES.length): Promise<CaughtUp> {
    const entries = this.source
      .prepare('SELECT n, tbl, key FROM copy_log WHERE tenant_id = ? ORDER BY n LIMIT ?')
      .bind(this.tenant, LOG_ROWS);
    const { results: log } = await this.run(() => entries.all<{ n: number; tbl: string; key: string }>());
    const last = log.at(-1);
    if (last === undefined) return { rows: 0, more: false };
    // A row of a table the bulk copy has not reached yet is left to it (it reads the row as it is
    // then, and its parents are not all there yet); only a row gone from the source goes from the
    // target (an earlier pass, whose step was lost, may have copied it).
    const reached = new Set(TENANT_TABLES.slice(0, copied + 1).map((t) => t.table));
    const keys = new Map<string, Set<string>>();
    for (const { tbl, key } of log) keys.set(tbl, (keys.get(tbl) ?? new Set()).add(key));
    const tables = TENANT_TABLES.filter((t) => keys.has(t.table));
    const named = (t: TenantTable): string => `[${[...(keys.get(t.table) ?? [])].join(',')}]`;
    const inKeys = (t: TenantTable): string =>
      `${keyColumns(t)} IN (SELECT ${t.key.map((_, i) => keyPart('j.value', i)).join(', ')} FROM json_each(?1) j)`;
    const reads = await this.batch(
      this.source,
      tables.map((t) =>
        this.source
          .prepare(`SELECT ${rowJson(t)} AS row, json_array(${list(t.key)}) AS k FROM ${t.table} WHERE ${inKeys(t)}`)
          .bind(named(t)),
      ),
    );
    const removals: D1PreparedStatement[] = [];
    const upserts: D1PreparedStatement[] = [];
    let rows = 0;
    tables.forEach((t, i) => {
      const found = (reads[i]?.results ?? []) as { row: string; k: string }[];
      const present = new Set(found.map((r) => JSON.stringify(JSON.parse(r.k))));
      const asked = [...(keys.get(t.table) ?? [])];
      // A leaf's rows are removed and written again (a unique value may have passed between two of
      // them); a parent's are updated in place and removed only when the source has none.
      const copying = reached.has(t.table);
      const absent = asked.filter((k) => !present.has(JSON.stringify(JSON.parse(k))));
      const gone = t.leaf && copying ? asked : absent;
      if (gone.length > 0)
        removals.unshift(this.target.prepare(`DELETE FROM ${t.table} WHERE ${inKeys(t)}`).bind(`[${gone.join(',')}]`));
      if (copying)
        upserts.push(
          ...this.writes(
            t,
            found.map((r) => r.row),
          ),
        );
      rows += (copying ? found.length : 0) + absent.length;
    });
    if (removals.length + upserts.length > 0) await this.batch(this.target, [this.fence(), ...removals, ...upserts]);
    const done = this.source.prepare('DELETE FROM copy_log WHERE tenant_id = ? AND n <= ?').bind(this.tenant, last.n);
    await this.run(() => done.run());
    return { rows, more: log.length === LOG_ROWS };
  }

  /** The switch begins: the source refuses every write of the tenant (the ledger's and every row's). */
  async freeze(): Promise<void> {
    await this.run(() =>
      this.source
        .prepare(
          `INSERT INTO departures (tenant_id, state) VALUES (?, 'switching')
           ON CONFLICT (tenant_id) DO UPDATE SET state = 'switching'`,
        )
        .bind(this.tenant)
        .run(),
    );
  }

  /** The tenant has arrived: the target's triggers derive and check its rows again. */
  async arrive(): Promise<void> {
    // Done already (a switch run again) is fine; another step holding the target is not.
    const { target, tenant, runner } = this;
    await this.batch(target, [
      target
        .prepare(
          `INSERT INTO arrivals (tenant_id, runner) SELECT ?1, NULL
           WHERE EXISTS (SELECT 1 FROM arrivals WHERE tenant_id = ?1 AND runner <> ?2)`,
        )
        .bind(tenant, runner),
      target.prepare('DELETE FROM arrivals WHERE tenant_id = ?').bind(tenant),
    ]);
  }

  /** The tenant has left the source for good: its writes there stay refused, its log is dropped. */
  async depart(): Promise<void> {
    const { source, tenant } = this;
    await this.batch(source, [
      source
        .prepare(
          `INSERT INTO departures (tenant_id, state) VALUES (?, 'moved')
           ON CONFLICT (tenant_id) DO UPDATE SET state = 'moved'`,
        )
        .bind(tenant),
      source.prepare("UPDATE copying SET state = 'moved' WHERE tenant_id = ?").bind(tenant),
      source.prepare('DELETE FROM copy_log WHERE tenant_id = ?').bind(tenant),
    ]);
  }

  /** A move given up before its switch: the source works as before, and logs nothing more. */
  async stay(): Promise<void> {
    const { source, tenant } = this;
    await this.batch(source, [
      source.prepare("DELETE FROM departures WHERE tenant_id = ? AND state = 'switching'").bind(tenant),
      source.prepare('DELETE FROM copying WHERE tenant_id = ?').bind(tenant),
      source.prepare('DELETE FROM copy_log WHERE tenant_id = ?').bind(tenant),
    ]);
  }

  /** The target takes the tenant's rows as they are again (a copy given up is removed with no trigger's say). */
  async expectArrival(): Promise<void> {
    const expecting = this.expecting();
    await this.run(() => expecting.run());
  }
}
