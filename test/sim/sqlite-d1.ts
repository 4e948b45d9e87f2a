/// <reference types="node" />
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';

/**
 * D1's binding over `node:sqlite`, for the simulator: the same SQL, the same transaction per
 * `batch()`, errors worded as D1 words them ("D1_ERROR: … : SQLITE_CONSTRAINT"). Every call runs
 * at once and completes synchronously; the simulator's network decides when its caller hears.
 */
export class SqliteD1 {
  private readonly compiled = new Map<string, StatementSync>();

  constructor(readonly db: DatabaseSync) {}

  /** The compiled statement of `sql`, compiled once per database. */
  statement(sql: string): StatementSync {
    let statement = this.compiled.get(sql);
    if (statement === undefined) this.compiled.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  /** A database with `migrations` applied: the one connection of this process, so statements compile once. */
  static migrated(migrations: readonly string[]): SqliteD1 {
    const d1 = new SqliteD1(new DatabaseSync(':memory:'));
    for (const sql of migrations) d1.db.exec(sql);
    return d1;
  }

  /**
   * Runs `run` on the database as it is now and puts it back as it was afterwards: the run's
   * writes happen inside one transaction that is rolled back (each batch a savepoint within it).
   */
  async isolated<T>(run: () => Promise<T>): Promise<T> {
    this.db.exec('BEGIN');
    try {
      return await run();
    } finally {
      this.db.exec('ROLLBACK');
    }
  }

  prepare(sql: string): SqliteStatement {
    return new SqliteStatement(this, sql, []);
  }

  /** Commits so far, as a D1 bookmark: sessions compare bookmarks as text. */
  bookmark(): string {
    const { commits } = this.statement('SELECT total_changes() AS commits').get() as { commits: number };
    return `00000000-${commits.toString(16).padStart(8, '0')}-00000000-${'0'.repeat(32)}`;
  }

  batch(statements: SqliteStatement[]): Promise<D1Result[]> {
    return settle(() => {
      this.db.exec('SAVEPOINT batch');
      try {
        const results = statements.map((statement) => statement.execute());
        this.db.exec('RELEASE batch');
        return results;
      } catch (error) {
        this.db.exec('ROLLBACK TO batch');
        this.db.exec('RELEASE batch');
        throw error;
      }
    });
  }

  exec(sql: string): Promise<D1ExecResult> {
    return settle(() => {
      this.db.exec(sql);
      return { count: 1, duration: 0 };
    });
  }
}

export class SqliteStatement {
  constructor(
    private readonly d1: SqliteD1,
    readonly sql: string,
    readonly values: readonly unknown[],
  ) {}

  bind(...values: unknown[]): SqliteStatement {
    for (const value of values)
      if (value === undefined) throw new Error("D1_TYPE_ERROR: Type 'undefined' not supported for value 'undefined'");
    return new SqliteStatement(this.d1, this.sql, values);
  }

  first<T>(column?: string): Promise<T | null> {
    return settle(() => {
      const row = this.execute().results[0] as Record<string, unknown> | undefined;
      if (row === undefined) return null;
      return (column === undefined ? row : row[column]) as T;
    });
  }

  all<T>(): Promise<D1Result<T>> {
    return settle(() => this.execute() as D1Result<T>);
  }

  run<T>(): Promise<D1Result<T>> {
    return this.all<T>();
  }

  raw<T>(): Promise<T[]> {
    return settle(() => this.execute().results.map((row) => Object.values(row as object)) as T[]);
  }

  /** Runs now, inside whatever transaction is open. */
  execute(): D1Result {
    try {
      const rows = this.d1
        .statement(this.sql)
        .all(...this.values.map(toSqlite))
        .map((row) => ({ ...row }));
      const { changes } = this.d1.statement('SELECT changes() AS changes').get() as { changes: number };
      return {
        results: rows,
        success: true,
        meta: {
          duration: 0,
          size_after: 0,
          rows_read: rows.length,
          rows_written: changes,
          last_row_id: 0,
          changed_db: changes > 0,
          changes,
        },
      };
    } catch (error) {
      throw d1Error(error);
    }
  }
}

function toSqlite(value: unknown): SQLInputValue {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  return value as SQLInputValue;
}

/** An SQLite error as D1 reports it: `D1_ERROR: <message>: SQLITE_<CODE>`. */
function d1Error(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(`D1_ERROR: ${String(error)}`);
  const code = (error as { errstr?: string }).errstr === 'constraint failed' ? 'SQLITE_CONSTRAINT' : 'SQLITE_ERROR';
  return new Error(`D1_ERROR: ${error.message}: ${code}`, { cause: error });
}

function settle<T>(run: () => T): Promise<T> {
  try {
    return Promise.resolve(run());
  } catch (error) {
    return Promise.reject(error as Error);
  }
}
