/**
 * Production D1 refuses what local D1 lets through: a statement's SQL over 100,000 bytes, more
 * than 100 bound parameters, a string or blob over 2,000,000 bytes. The test and chaos builds
 * wrap their D1 binding with this, so every test runs under production's limits: a statement
 * past one throws as production would, before it reaches the database.
 */
export const D1_LIMITS = { sqlBytes: 100_000, parameters: 100, valueBytes: 2_000_000 } as const;

const bytes = (text: string): number =>
  text.length * 3 <= D1_LIMITS.valueBytes ? text.length : new TextEncoder().encode(text).byteLength;

function tooBig(what: string): Error {
  return new Error(`D1_ERROR: ${what}: SQLITE_TOOBIG`);
}

export function checkStatement(sql: string, values: readonly unknown[]): void {
  if (new TextEncoder().encode(sql).byteLength > D1_LIMITS.sqlBytes) throw tooBig('statement too long');
  if (values.length > D1_LIMITS.parameters) throw tooBig('too many SQL variables');
  for (const value of values) {
    if (typeof value === 'string' && bytes(value) > D1_LIMITS.valueBytes) throw tooBig('string or blob too big');
    if (value instanceof ArrayBuffer && value.byteLength > D1_LIMITS.valueBytes) throw tooBig('string or blob too big');
  }
}

const limited = new WeakMap<D1Database, D1Database>();

/**
 * `db` with production's limits checked on every statement it prepares and binds. One wrapper
 * per binding, so what the service remembers per database (the cursor key) stays remembered.
 */
export function withProductionLimits(db: D1Database): D1Database {
  let wrapped = limited.get(db);
  if (wrapped === undefined) limited.set(db, (wrapped = wrap(db)));
  return wrapped;
}

/** The real statement behind each checked one: a batch hands D1 the real ones, whichever session prepared them. */
const real = new WeakMap<object, D1PreparedStatement>();

/** `db`, or one of its sessions (whose statements are checked alike), with the limits checked. */
function wrap<D extends D1Database | D1DatabaseSession>(db: D): D {
  return new Proxy(db, {
    get(target, property) {
      if (property === 'prepare') {
        return (sql: string) => {
          checkStatement(sql, []);
          const statement = target.prepare(sql);
          const checked = new Proxy(statement, {
            get(inner, name) {
              if (name === 'bind') {
                return (...values: unknown[]) => {
                  checkStatement(sql, values);
                  return inner.bind(...values);
                };
              }
              const value = Reflect.get(inner, name, inner) as unknown;
              return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(inner) : value;
            },
          });
          real.set(checked, statement);
          return checked;
        };
      }
      if (property === 'withSession') return (start?: string) => wrap((target as D1Database).withSession(start));
      if (property === 'batch')
        return (statements: D1PreparedStatement[]) => target.batch(statements.map((s) => real.get(s) ?? s));
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
