import type { Env } from '../../src/env.ts';
import worker from '../../src/index.ts';
import { RecordObject } from '../../src/record-object.ts';
import { TenantObject } from '../../src/tenant-object.ts';
import { runScheduled } from '../../src/scheduled.ts';
import { tenantOfId } from '../../src/domain/tenant.ts';
import { databaseFor } from '../../src/tenancy/routes.ts';
import { formulaStep } from '../../src/write/formula-build.ts';
import { withProductionLimits } from '../limits.ts';
import type { SqliteD1, SqliteStatement } from './sqlite-d1.ts';
import { EPOCH, type Actor, type World } from './world.ts';

/**
 * The deployment, simulated: the service's own Worker and record objects over SQLite databases
 * (DB, and more when given: each tenant's requests reach its own), joined by a network that
 * delays every call, fails some before they run, loses the replies of others after they ran, and
 * resets objects, all drawn from the world's seed. What runs is the production code; only the
 * bindings are the simulator's.
 */

export interface Faults {
  /** A call fails before it runs (D1 or an object). */
  fail: number;
  /** A call runs, then its reply is lost. */
  lose: number;
  /** An object resets right after one of its D1 writes commits, before it hears the reply. */
  restart: number;
  /** An object resets when any reply reaches it (so at any await of I/O). */
  crash: number;
  /** A hop takes seconds instead of milliseconds (deadlines run out, turns time out). */
  slow: number;
  /**
   * A call to an object reaches a second live instance of it (a twin, as during a network
   * partition), while the one already running stays alive and keeps serving other callers.
   */
  twin: number;
}

export const NO_FAULTS: Faults = { fail: 0, lose: 0, restart: 0, crash: 0, slow: 0, twin: 0 };

export const ADMIN_TOKEN = 'sim-admin-token';

/** What the faults did, for the report and for tests that must prove they happened. */
export interface Injected {
  failed: number;
  lost: number;
  restarts: number;
  crashes: number;
  twins: number;
}

/** The object classes the simulation runs, by binding. */
type Kind = 'RECORDS' | 'TENANTS';

interface Host {
  name: string;
  actor: Actor;
  object: RecordObject | TenantObject;
  /** Callers waiting on this life of the object: told of its reset. */
  waiting: Set<(error: Error) => void>;
}

function lostConnection(): Error {
  return Object.assign(new Error('Network connection lost.'), { retryable: true });
}

function resetError(): Error {
  return Object.assign(new Error('Durable Object reset: simulated restart'), { durableObjectReset: true });
}

export class Cluster {
  faults: Faults;
  readonly injected: Injected = { failed: 0, lost: 0, restarts: 0, crashes: 0, twins: 0 };
  /** The live instances of each object: usually one, two or more while twins run. */
  private readonly hosts = new Map<string, Host[]>();
  private lives = 0;
  private requests = 0;
  /** The databases by binding name: DB first. */
  readonly databases: Readonly<Record<string, SqliteD1>>;
  /** Each object's durable storage (what outlives its lives), and its alarm (virtual ms), by name. */
  private readonly storages = new Map<string, Map<string, unknown>>();
  private readonly alarms = new Map<string, number>();
  private readonly ringing = new Map<string, Promise<void>>();
  /** What the objects' alarms did, for the report. */
  readonly alarmRuns = { ran: 0, interrupted: 0 };

  constructor(
    private readonly world: World,
    d1: SqliteD1 | Readonly<Record<string, SqliteD1>>,
    faults: Faults,
    /** Bindings that replace the defaults below (an import run's object namespace and file bucket). */
    private readonly bindings: Partial<Env> = {},
  ) {
    this.databases = 'db' in d1 ? { DB: d1 as SqliteD1 } : (d1 as Record<string, SqliteD1>);
    this.faults = faults;
  }

  /** One request through the production Worker, as a fresh actor. */
  fetch(request: Request): Promise<Response> {
    const actor: Actor = { name: `request ${++this.requests}`, dead: false };
    return this.world.actors.run(actor, () =>
      worker.fetch(request, this.env(actor), {
        waitUntil: (promise: Promise<unknown>) => void promise.catch(() => undefined),
        passThroughOnException: () => undefined,
        props: {},
      } as unknown as ExecutionContext),
    );
  }

  /** The Cron Trigger's run at the current virtual time, as a fresh actor. */
  scheduled(): Promise<void> {
    const actor: Actor = { name: `scheduled ${++this.requests}`, dead: false };
    // It logs each step's count; a run judges by what the database holds after it.
    const log = console.log;
    if (!process.env.SIM_TRACE) console.log = () => undefined;
    return this.world.actors
      .run(actor, () => runScheduled(this.env(actor), Date.now()))
      .finally(() => (console.log = log));
  }

  /**
   * One step of an object's formula computation, as its builder's alarm runs it, as a fresh actor
   * (`now`: the clock it reads): when the next step is due, undefined when none is.
   */
  formulaStep(objectId: number, now?: number): Promise<number | undefined> {
    const actor: Actor = { name: `formulas ${++this.requests}`, dead: false };
    return this.world.actors.run(actor, async () => {
      const db = await databaseFor(this.env(actor), tenantOfId(objectId));
      return db === undefined ? undefined : (await formulaStep(db, objectId, now ?? Date.now())).next;
    });
  }

  /** What code running as `actor` is given: D1 over this network, the record objects, stubs for the rest. */
  env(actor: Actor): Env {
    const databases = Object.fromEntries(
      Object.entries(this.databases).map(([name, d1]) => [
        name,
        withProductionLimits(this.database(actor, d1) as unknown as D1Database),
      ]),
    );
    return {
      ...databases,
      DATABASES: Object.keys(this.databases).join(','),
      DB: databases.DB as D1Database,
      RECORDS: this.namespace('RECORDS') as unknown as Env['RECORDS'],
      // Runs have no webhook subscriptions: a wake-up, were one sent, is answered and does nothing.
      WEBHOOKS: { getByName: () => ({ wake: () => Promise.resolve() }) } as unknown as Env['WEBHOOKS'],
      INDEX_BUILDS: { getByName: () => ({ start: () => Promise.resolve() }) } as unknown as Env['INDEX_BUILDS'],
      // Runs send no imports through the Worker (they run chunks themselves): never called.
      IMPORTS: {} as Env['IMPORTS'],
      IMPORT_FILES: {} as Env['IMPORT_FILES'],
      // Runs upload no files: never called.
      FILES: {} as Env['FILES'],
      TENANTS: this.namespace('TENANTS') as unknown as Env['TENANTS'],
      // Runs open no live streams: a wake-up is answered and does nothing.
      LIVE: { getByName: () => ({ wake: () => Promise.resolve() }) } as unknown as Env['LIVE'],
      ADMIN_TOKEN,
      CURSOR_SECRET: 'sim-cursor-secret',
      RATE_LIMITS: 'off',
      ...this.bindings,
    };
  }

  /** Latency of one hop, in virtual milliseconds. */
  private hop(): Promise<void> {
    const slow = this.world.chance(this.faults.slow);
    return this.world.sleep(slow ? this.world.between(1_000, 12_000) : this.world.between(1, 4));
  }

  private decide(): 'fail' | 'lose' | undefined {
    const drawn = this.world.random();
    if (drawn < this.faults.fail) return 'fail';
    if (drawn < this.faults.fail + this.faults.lose) return 'lose';
    return undefined;
  }

  /**
   * A call from the current actor: out, run, back. The reply reaches only a living caller; an
   * object that is called back may reset instead (`crash`), or right after a write commits
   * (`restart`).
   */
  private async send<T>(run: () => Promise<T>, wrote = false, what = ''): Promise<T> {
    const fault = this.decide();
    if (process.env.SIM_TRACE)
      console.log(`${Math.round(this.world.now)} ${this.world.actor()?.name}: ${what.slice(0, 90)} ${fault ?? ''}`);
    await this.hop();
    if (fault === 'fail') {
      this.injected.failed++;
      throw lostConnection();
    }
    const result = await run();
    const caller = this.world.actor();
    const host = caller === undefined ? undefined : this.hostOf(caller);
    // A tenant's mover writes tens of times a step: it resets a tenth as often, or it would rarely
    // finish a step under the harshest runs.
    const rare = host?.name.startsWith('TENANTS:') === true ? 0.1 : 1;
    if (host !== undefined && wrote && this.world.chance(this.faults.restart * rare)) {
      this.injected.restarts++;
      this.reset(host);
    }
    await this.hop();
    if (host !== undefined && this.world.chance(this.faults.crash * rare)) {
      this.injected.crashes++;
      this.reset(host);
      await new Promise(() => undefined);
    }
    if (fault === 'lose') {
      this.injected.lost++;
      throw lostConnection();
    }
    return result;
  }

  private database(actor: Actor, d1: SqliteD1): object {
    const send = <T>(run: () => Promise<T>, wrote = false, what = ''): Promise<T> => this.send(run, wrote, what);
    const wrap = (statement: SqliteStatement): object => ({
      statement,
      bind: (...values: unknown[]) => wrap(statement.bind(...values)),
      first: (column?: string) => send(() => statement.first(column), false, statement.sql),
      all: () => send(() => statement.all(), false, statement.sql),
      run: () => send(() => statement.run(), true, statement.sql),
      raw: () => send(() => statement.raw(), false, statement.sql),
    });
    const database = {
      actor: actor.name,
      prepare: (sql: string) => wrap(d1.prepare(sql)),
      batch: (statements: { statement: SqliteStatement }[]) => {
        const real = statements.map((s) => s.statement);
        const writesRecords = real.some((s) => /UPDATE records|INSERT INTO records/.test(s.sql));
        return send(() => d1.batch(real), writesRecords, `batch ${real.map((r) => r.sql.slice(0, 30)).join(' | ')}`);
      },
      exec: (sql: string) => send(() => d1.exec(sql)),
    };
    // One database, no replica: every session reads the primary, and its bookmark is the latest commit.
    const withSession = () => ({
      prepare: database.prepare,
      batch: database.batch,
      getBookmark: () => d1.bookmark(),
    });
    return { ...database, withSession };
  }

  private namespace(kind: Kind): object {
    const stub = (name: string) =>
      new Proxy(
        {},
        {
          get: (_target, method) =>
            method === 'then' || typeof method !== 'string'
              ? undefined
              : (...args: unknown[]) => this.callObject(kind, name, method, args),
        },
      );
    return {
      idFromName: (name: string) => ({ name, toString: () => name }),
      get: (id: { name: string }) => stub(id.name),
      getByName: (name: string) => stub(name),
    };
  }

  private async callObject(kind: Kind, name: string, method: string, args: unknown[]): Promise<unknown> {
    return this.send(
      async () => {
        const host = this.host(kind, name);
        if (process.env.SIM_TRACE) console.log(`  -> ${host.actor.name}.${method}`);
        const sent = structuredClone(args);
        const answer = await new Promise((resolve, reject) => {
          host.waiting.add(reject);
          this.world.actors.run(host.actor, () => {
            Promise.resolve()
              .then(() =>
                (host.object as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!(...sent),
              )
              .then(resolve, reject)
              .finally(() => host.waiting.delete(reject));
          });
        });
        return structuredClone(answer);
      },
      false,
      `call ${name}.${method}`,
    );
  }

  /** The instance a call reaches: a live one, or a new twin beside them (or the first life). */
  private host(kind: Kind, bare: string): Host {
    const name = `${kind}:${bare}`;
    const live = this.hosts.get(name) ?? [];
    if (live.length > 0 && !this.world.chance(this.faults.twin)) return this.world.pick(live);
    if (live.length > 0) this.injected.twins++;
    const actor: Actor = { name: `object ${name} life ${++this.lives}`, dead: false };
    const created: Host = { name, actor, waiting: new Set(), object: undefined as unknown as RecordObject };
    const ctx = {
      waitUntil: (promise: Promise<unknown>) => void promise.catch(() => undefined),
      abort: () => this.reset(created),
      id: { name: bare, toString: () => bare },
      storage: this.storage(kind, name),
    } as unknown as DurableObjectState;
    created.object = this.world.actors.run(actor, () =>
      kind === 'RECORDS' ? new RecordObject(ctx, this.env(actor)) : new TenantObject(ctx, this.env(actor)),
    );
    if (process.env.SIM_TRACE && live.length > 0) console.log(`${Math.round(this.world.now)} TWIN ${actor.name}`);
    this.hosts.set(name, [...live, created]);
    return created;
  }

  /**
   * An object's durable storage: kept across its lives (a reset loses only memory), written at
   * once. Its alarm runs in one of its live instances (or a new life) when due; an alarm whose run
   * throws or is cut short by a reset runs again a second later, as the runtime retries it.
   */
  private storage(kind: Kind, name: string): object {
    const stored = this.storages.get(name) ?? new Map<string, unknown>();
    this.storages.set(name, stored);
    const at = (): number | null => this.alarms.get(name) ?? null;
    const setAlarm = (when: number | Date): void => {
      const due = Math.max(this.world.now, Number(when) - EPOCH);
      this.alarms.set(name, due);
      // The runtime's timer: no actor of the object's, so no reset cancels it.
      this.world.actors.exit(() => this.world.schedule(due - this.world.now, () => void this.ring(kind, name, due)));
    };
    return {
      get: (key: string) => Promise.resolve(structuredClone(stored.get(key))),
      put: (key: string, value: unknown) => Promise.resolve(void stored.set(key, structuredClone(value))),
      delete: (key: string) => Promise.resolve(stored.delete(key)),
      deleteAll: () => Promise.resolve(stored.clear()),
      getAlarm: () => Promise.resolve(at() === null ? null : EPOCH + Math.floor(at() as number)),
      setAlarm: (when: number | Date) => Promise.resolve(setAlarm(when)),
      deleteAlarm: () => Promise.resolve(void this.alarms.delete(name)),
    };
  }

  private async ring(kind: Kind, name: string, due: number): Promise<void> {
    if (this.alarms.get(name) !== due) return;
    // The runtime runs one alarm of an object at a time: one set meanwhile waits for it.
    const running = this.ringing.get(name);
    if (running !== undefined) {
      await running;
      return this.ring(kind, name, due);
    }
    let rung = (): void => undefined;
    this.ringing.set(name, new Promise<void>((resolve) => (rung = resolve)));
    try {
      await this.runAlarm(kind, name);
    } finally {
      this.ringing.delete(name);
      rung();
    }
  }

  private async runAlarm(kind: Kind, name: string): Promise<void> {
    this.alarms.delete(name);
    const host = this.host(kind, name.slice(kind.length + 1));
    this.alarmRuns.ran++;
    const retry = (): void => {
      this.alarmRuns.interrupted++;
      if (!this.alarms.has(name)) {
        const again = this.world.now + 1_000;
        this.alarms.set(name, again);
        this.world.actors.exit(() => this.world.schedule(1_000, () => void this.ring(kind, name, again)));
      }
    };
    await new Promise<void>((resolve) => {
      const hear = (): void => {
        retry();
        resolve();
      };
      host.waiting.add(hear);
      this.world.actors.run(host.actor, () => {
        Promise.resolve()
          .then(() => (host.object as TenantObject).alarm())
          .catch(retry)
          .finally(() => {
            host.waiting.delete(hear);
            resolve();
          });
      });
    });
  }

  private hostOf(actor: Actor): Host | undefined {
    for (const live of this.hosts.values()) for (const host of live) if (host.actor === actor) return host;
    return undefined;
  }

  /** This life of the object ends: it runs nothing more, and its callers hear of the reset. */
  private reset(host: Host): void {
    if (host.actor.dead) return;
    if (process.env.SIM_TRACE) console.log(`${Math.round(this.world.now)} RESET ${host.actor.name}`);
    host.actor.dead = true;
    const live = (this.hosts.get(host.name) ?? []).filter((other) => other !== host);
    if (live.length > 0) this.hosts.set(host.name, live);
    else this.hosts.delete(host.name);
    for (const hear of host.waiting) hear(resetError());
    host.waiting.clear();
  }
}
