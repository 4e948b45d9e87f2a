/**
 * The test build's record of where each D1 statement ran: on the database binding itself, or in
 * a session (and how that session started: `first-primary`, `first-unconstrained`, a bookmark).
 * Tests read it to prove which reads may be served by a replica and which go to the primary.
 */
export interface Ran {
  sql: string;
  /** `database`, or the session's start. */
  via: string;
}

export const d1Log: Ran[] = [];

const inner = new WeakMap<object, D1PreparedStatement>();

function statement(real: D1PreparedStatement, sql: string, via: string): D1PreparedStatement {
  const proxy = new Proxy(real, {
    get(target, property) {
      if (property === 'bind') return (...values: unknown[]) => statement(target.bind(...values), sql, via);
      if (property === 'first' || property === 'all' || property === 'run' || property === 'raw') {
        return (...args: unknown[]) => {
          d1Log.push({ sql, via });
          return (target[property] as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  inner.set(proxy, real);
  sqlOf.set(real, sql);
  return proxy;
}

const sqlOf = new WeakMap<D1PreparedStatement, string>();

const logged = new WeakMap<D1Database, D1Database>();

/**
 * `db` with every statement it and its sessions run written to d1Log. One wrapper per binding,
 * so what the service remembers per database (the cursor key) stays remembered.
 */
export function loggingD1(db: D1Database): D1Database {
  let wrapped = logged.get(db);
  if (wrapped === undefined) logged.set(db, (wrapped = logging(db, 'database')));
  return wrapped;
}

function logging<D extends D1Database | D1DatabaseSession>(db: D, via: string): D {
  return new Proxy(db, {
    get(target, property) {
      if (property === 'prepare') return (sql: string) => statement(target.prepare(sql), sql, via);
      if (property === 'withSession')
        return (start = 'first-unconstrained') => logging((target as D1Database).withSession(start), start);
      if (property === 'batch') {
        return (statements: D1PreparedStatement[]) => {
          const real = statements.map((s) => inner.get(s) ?? s);
          for (const s of real) d1Log.push({ sql: sqlOf.get(s) ?? '', via });
          return target.batch(real);
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
