import type { Env } from '../../src/env.ts';
import { withProductionLimits } from '../limits.ts';
import { isBookmark, latestBookmark } from '../../src/http/bookmark.ts';
import { replicaOf, type Replica, type Sql } from './replica.ts';
import { databaseNames } from '../../src/tenancy/routes.ts';

/**
 * Fault injection for the chaos build: wraps the D1 binding and the record objects' namespace so
 * that a call fails before it runs, or runs and then loses its reply (the caller gets the
 * retryable "Network connection lost" that D1 and Durable Objects raise). Everything else passes
 * through to the real binding: nothing here imitates D1 or an object.
 */

export type Fault = 'fail' | 'lose' | 'delay' | undefined;

/** One call about to go out: to D1 (with the SQL of its statements) or to a record's object. */
export interface OutgoingCall {
  target: 'd1' | 'object';
  /** `batch`, `first`, `all`, `run`, `raw` for D1; the RPC method for an object. */
  method: string;
  sql: readonly string[];
  /** Who makes the call: the Worker or a record object. */
  from: 'worker' | 'object';
}

/**
 * Decides the fault of each call; tests replace it, the chaos build draws from its vars.
 * `onLost` runs after a call whose reply is to be lost has completed, before the caller hears.
 */
export const chaos: {
  decide: ((call: OutgoingCall) => Fault) | undefined;
  delayMs: number;
  onLost: (() => Promise<void>) | undefined;
  /** Whether the object that made this D1 batch resets right after it committed (a test's restart). */
  restartAfter: ((sql: readonly string[]) => boolean) | undefined;
} = {
  decide: undefined,
  delayMs: 0,
  onLost: undefined,
  restartAfter: undefined,
};

export function lostConnection(): Error {
  const error = new Error('Network connection lost.');
  (error as Error & { retryable: boolean }).retryable = true;
  return error;
}

function decider(env: ChaosVars, counted?: (fault: Fault) => void): (call: OutgoingCall) => Fault {
  const lose = Number(env.CHAOS_LOST_REPLY ?? 0);
  const fail = Number(env.CHAOS_FAIL ?? 0);
  const draw = (call: OutgoingCall): Fault => {
    const scripted = chaos.decide?.(call);
    if (scripted !== undefined || chaos.decide !== undefined) return scripted;
    const drawn = Math.random();
    return drawn < fail ? 'fail' : drawn < fail + lose ? 'lose' : undefined;
  };
  return (call) => {
    const fault = draw(call);
    if (fault !== undefined) counted?.(fault);
    return fault;
  };
}

export interface ChaosVars {
  CHAOS_LOST_REPLY?: string;
  CHAOS_FAIL?: string;
  /** Probability (0 to 1) that a record object resets itself after one of its D1 writes commits, before it answers. */
  CHAOS_RESTART?: string;
  /** Geo simulation: one-way milliseconds between the Worker and D1's region (where objects stand too). */
  GEO_FAR_MS?: string;
  /** Geo simulation: one-way milliseconds within D1's region (an object to D1), and to a replica near the Worker. */
  GEO_NEAR_MS?: string;
  /** Geo simulation: set, the Worker has a read replica near it, this many ms behind the primary (replica.ts). */
  GEO_REPLICA_LAG_MS?: string;
  /** The replica's own database (migrated like DB), used only with GEO_REPLICA_LAG_MS. */
  REPLICA?: D1Database;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The round trip a call pays by where its parties stand: the Worker runs near the client, far
 * from D1; record objects are placed near D1 (the location hint). So a Worker's call to D1 or to
 * an object crosses the long haul twice, and an object's call to D1 stays in the region.
 */
function roundTrip(env: ChaosVars, from: 'worker' | 'object'): number {
  const oneWay = Number(from === 'worker' ? (env.GEO_FAR_MS ?? 0) : (env.GEO_NEAR_MS ?? 0));
  return 2 * oneWay;
}

/**
 * Latency of calls made in the same synchronous run: they share one timer, which ends when each
 * of them would have ended alone.
 */
const waits = new Map<number, Promise<void>>();
function travel(ms: number): Promise<void> {
  let wait = waits.get(ms);
  if (wait === undefined) {
    waits.set(ms, (wait = sleep(ms)));
    queueMicrotask(() => waits.delete(ms));
  }
  return wait;
}

async function inject<T>(fault: Fault, run: () => Promise<T>, latency = 0, committed?: () => void): Promise<T> {
  if (latency > 0) await travel(latency);
  if (fault === 'fail') throw lostConnection();
  if (fault === 'delay') await sleep(chaos.delayMs);
  const result = await run();
  committed?.();
  if (fault === 'lose') {
    await chaos.onLost?.();
    throw lostConnection();
  }
  return result;
}

/**
 * `env` with its D1 binding and record objects wrapped, as seen by `from`. `counted` hears of
 * every fault injected into a call made through this env.
 */
export function chaosEnv<E extends Pick<Env, 'DB'> & Partial<Env>>(
  env: E & ChaosVars,
  from: 'worker' | 'object',
  counted?: (fault: Fault) => void,
  restart?: () => void,
): E {
  const decide = decider(env, counted);
  const latency = roundTrip(env, from);
  const chance = Number(env.CHAOS_RESTART ?? 0);
  // The restart nemesis: after a write of records commits, before anyone hears of it.
  const committed =
    restart === undefined
      ? undefined
      : (sql: readonly string[]) => {
          if (chaos.restartAfter?.(sql) === true) restart();
          else if (chance > 0 && sql.some((text) => /UPDATE records|INSERT INTO records/.test(text)))
            if (Math.random() < chance) restart();
        };
  // Every database is wrapped alike; only DB has the geo simulation's replica.
  const databases: Record<string, D1Database> = {};
  for (const name of databaseNames(env as unknown as Env)) {
    const binding = (env as unknown as Record<string, D1Database | undefined>)[name];
    if (binding === undefined) continue;
    const replica = name === 'DB' ? replicaFor(env) : undefined;
    databases[name] =
      from === 'worker'
        ? workerD1(binding, env, latency, replica, counted)
        : wrapD1(withProductionLimits(binding), decide, from, latency, committed, replica);
  }
  return {
    ...env,
    ...databases,
    ...(env.RECORDS === undefined ? {} : { RECORDS: wrapObjects(env.RECORDS, decide, from, latency) }),
  };
}

/**
 * The Worker's D1, wrapped once per binding as production's binding is one per isolate, so what
 * the service remembers per database (the cursor key) stays remembered. Its faults are counted
 * for the request that came in last (the counts of requests in flight together may mix; their
 * sum is exact).
 */
const workerD1s = new WeakMap<
  D1Database,
  { db: D1Database; counting: { counted?: ((fault: Fault) => void) | undefined } }
>();
function workerD1(
  binding: D1Database,
  env: ChaosVars,
  latency: number,
  replica: ReturnType<typeof replicaFor>,
  counted?: (fault: Fault) => void,
): D1Database {
  let wrapped = workerD1s.get(binding);
  if (wrapped === undefined) {
    const counting: { counted?: ((fault: Fault) => void) | undefined } = {};
    const decide = decider(env, (fault) => counting.counted?.(fault));
    const db = wrapD1(withProductionLimits(binding), decide, 'worker', latency, undefined, replica);
    workerD1s.set(binding, (wrapped = { db, counting }));
  }
  wrapped.counting.counted = counted;
  return wrapped.db;
}

/** The replica model, when the geo simulation asks for one. */
function replicaFor(env: ChaosVars): { model: Replica; tripMs: number } | undefined {
  const lag = env.GEO_REPLICA_LAG_MS;
  if (lag === undefined || lag === '' || env.REPLICA === undefined) return undefined;
  return {
    model: replicaOf(env.REPLICA, Number(lag), roundTrip(env, 'worker')),
    tripMs: roundTrip(env, 'object'),
  };
}

function wrapD1(
  db: D1Database,
  decide: (call: OutgoingCall) => Fault,
  from: 'worker' | 'object',
  latency: number,
  committed?: (sql: readonly string[]) => void,
  replica?: { model: Replica; tripMs: number },
): D1Database {
  // Statements keep their SQL and values beside them; the real batch() is handed the real statements.
  const real = new WeakMap<object, D1PreparedStatement>();
  const sqlOf = new WeakMap<D1PreparedStatement, Sql>();
  type Run = (statements: Sql[], method: string | undefined, direct: () => Promise<unknown>) => Promise<unknown>;
  const wrapStatement = (statement: D1PreparedStatement, sql: Sql, run: Run): D1PreparedStatement => {
    sqlOf.set(statement, sql);
    const proxy = new Proxy(statement, {
      get(target, property) {
        if (property === 'bind')
          return (...values: unknown[]) => wrapStatement(target.bind(...values), { sql: sql.sql, params: values }, run);
        if (property === 'first' || property === 'all' || property === 'run' || property === 'raw') {
          return (...args: unknown[]) =>
            inject(decide({ target: 'd1', method: property, sql: [sql.sql], from }), () =>
              run([sql], property, () =>
                (target[property] as (...a: unknown[]) => Promise<unknown>).apply(target, args),
              ),
            );
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    real.set(proxy, statement);
    return proxy;
  };
  // The database and its sessions alike. With a replica, the Worker's sessions that may read
  // anywhere (not `first-primary`) read where replica.ts routes them; every other statement
  // pays the trip to the primary, and the replica hears of what it wrote.
  const wrapHandle = <D extends D1Database | D1DatabaseSession>(handle: D, start?: string): D => {
    const near = replica !== undefined && from === 'worker' && start !== undefined && start !== 'first-primary';
    let reached = start !== undefined && isBookmark(start) ? start : undefined;
    const run: Run = async (statements, method, direct) => {
      if (near && replica !== undefined && (await replica.model.route(reached)) === 'replica') {
        await travel(replica.tripMs);
        const result = await replica.model.run(statements, method);
        reached = latestBookmark(reached, replica.model.position);
        return result;
      }
      await travel(latency);
      const result = await direct();
      const bookmark = 'getBookmark' in handle ? handle.getBookmark() : null;
      if (near) reached = latestBookmark(reached, bookmark);
      else replica?.model.wrote(statements, bookmark);
      return result;
    };
    return new Proxy(handle, {
      get(target, property) {
        if (property === 'prepare')
          return (sql: string) => wrapStatement(target.prepare(sql), { sql, params: [] }, run);
        if (property === 'withSession')
          return (session?: string) => wrapHandle((target as D1Database).withSession(session), session);
        if (property === 'getBookmark' && near) return () => reached ?? null;
        if (property === 'batch') {
          return (statements: D1PreparedStatement[]) => {
            const unwrapped = statements.map((s) => real.get(s) ?? s);
            const sql = unwrapped.map((s) => sqlOf.get(s) ?? { sql: '', params: [] });
            return inject(
              decide({ target: 'd1', method: 'batch', sql: sql.map((s) => s.sql), from }),
              () => run(sql, undefined, () => target.batch(unwrapped)),
              0,
              committed && (() => committed(sql.map((s) => s.sql))),
            );
          };
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  };
  return wrapHandle(db);
}

// Stubs are handled as plain objects: their RPC types are too deep for the checker here.
function wrapObjects<N extends object>(
  namespace: N,
  decide: (call: OutgoingCall) => Fault,
  from: 'worker' | 'object',
  latency: number,
): N {
  const wrapStub = (stub: object): object =>
    new Proxy(stub, {
      get(target, property) {
        const value = Reflect.get(target, property, target) as unknown;
        if (
          typeof property !== 'string' ||
          typeof value !== 'function' ||
          property === 'fetch' ||
          property === 'connect'
        )
          return value;
        return (...args: unknown[]) =>
          // Called on the stub itself: an RPC method has no `apply` of its own (the stub would send it).
          inject(
            decide({ target: 'object', method: property, sql: [], from }),
            () => (target as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[property]!(...args),
            latency,
          );
      },
    });
  return new Proxy(namespace, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (property === 'get' || property === 'getByName')
        return (...args: unknown[]) => wrapStub((value as (...a: unknown[]) => object).call(target, ...args));
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
