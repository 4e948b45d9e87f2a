import type { Env } from '../../src/env.ts';
import { ImportObject } from '../../src/import-object.ts';
import { isChunkMoved } from '../../src/storage/imports.ts';
import type { Cluster } from './cluster.ts';
import type { Actor, World } from './world.ts';

/**
 * The import objects, simulated: the production ImportObject class, one object per import name,
 * each with durable storage (its values and its one alarm) that outlives its instances. The
 * runtime's part is played here: an alarm runs on a live instance (or a new one) once it is due
 * and no other alarm of the object runs; an alarm whose instance reset before it finished is
 * run again after a backoff (at most six times; past that the Cron Trigger's start takes it up).
 * Faults come from the cluster's: a call to an object fails before it runs or loses its reply;
 * an instance resets right after one of its D1 batches (`restart`) or at any reply it hears
 * (`crash`); an alarm may run on a second live instance at once (a twin), so two run chunks of
 * one import side by side.
 */

interface Life {
  actor: Actor;
  object: ImportObject;
  /** Callers waiting on this instance: told of its reset. */
  waiting: Set<(error: Error) => void>;
}

interface Hosted {
  name: string;
  values: Map<string, unknown>;
  /** The alarm's time (epoch ms), if one is set. */
  alarm: number | undefined;
  /** Instances running the alarm handler now. */
  running: Set<Life>;
  lives: Life[];
  /** Runs again of an alarm whose instance reset, since one last finished. */
  retries: number;
}

/** What the import objects' runtime did, for the report. */
export interface ImportInjected {
  alarms: number;
  resets: number;
  twins: number;
  retried: number;
  callsFailed: number;
  callsLost: number;
}

const ALARM_RETRIES = 6;
const ALARM_BACKOFF_MS = 2_000;

export class ImportObjects {
  readonly injected: ImportInjected = { alarms: 0, resets: 0, twins: 0, retried: 0, callsFailed: 0, callsLost: 0 };
  private readonly objects = new Map<string, Hosted>();
  private lifeCount = 0;
  /** Chunks D1 refused because the import had moved past them (applied before, or cancelled). */
  chunksMoved = 0;
  /** Whether instances reset and twins run: off once a run checks its history. */
  calm = false;

  constructor(
    private readonly world: World,
    private readonly cluster: () => Cluster,
  ) {}

  binding(): Env['IMPORTS'] {
    const stub = (name: string) =>
      new Proxy(
        {},
        {
          get: (_target, method) =>
            method === 'then' || typeof method !== 'string'
              ? undefined
              : (...args: unknown[]) => this.call(name, method, args),
        },
      );
    return {
      idFromName: (name: string) => ({ name, toString: () => name }),
      get: (id: { name: string }) => stub(id.name),
      getByName: stub,
    } as unknown as Env['IMPORTS'];
  }

  private faults() {
    const faults = this.cluster().faults;
    return this.calm ? { ...faults, restart: 0, crash: 0, twin: 0 } : faults;
  }

  private hosted(name: string): Hosted {
    let hosted = this.objects.get(name);
    if (hosted === undefined)
      this.objects.set(
        name,
        (hosted = { name, values: new Map(), alarm: undefined, running: new Set(), lives: [], retries: 0 }),
      );
    return hosted;
  }

  /** An RPC from the current actor: out, run on a live instance (or a new one), back. */
  private async call(name: string, method: string, args: unknown[]): Promise<unknown> {
    const { fail, lose } = this.cluster().faults;
    const drawn = this.world.random();
    await this.world.sleep(this.world.between(1, 4));
    if (drawn < fail) {
      this.injected.callsFailed++;
      throw Object.assign(new Error('Network connection lost.'), { retryable: true });
    }
    const hosted = this.hosted(name);
    const life = this.world.chance(this.faults().twin) ? this.newLife(hosted) : this.life(hosted);
    const answer = await new Promise((resolve, reject) => {
      life.waiting.add(reject);
      this.world.actors.run(life.actor, () => {
        Promise.resolve()
          .then(() =>
            (life.object as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!(...args),
          )
          .then(resolve, reject)
          .finally(() => life.waiting.delete(reject));
      });
    });
    await this.world.sleep(this.world.between(1, 4));
    if (drawn < fail + lose) {
      this.injected.callsLost++;
      throw Object.assign(new Error('Network connection lost.'), { retryable: true });
    }
    return answer;
  }

  /** A live instance of the object, or its first (or next) life. */
  private life(hosted: Hosted): Life {
    return hosted.lives.length > 0 ? this.world.pick(hosted.lives) : this.newLife(hosted);
  }

  private newLife(hosted: Hosted): Life {
    if (hosted.lives.length > 0) this.injected.twins++;
    const actor: Actor = { name: `import object ${hosted.name} life ${++this.lifeCount}`, dead: false };
    if (process.env.SIM_TRACE && hosted.lives.length > 0)
      console.log(`${Math.round(this.world.now)} TWIN ${actor.name}`);
    const life: Life = { actor, object: undefined as unknown as ImportObject, waiting: new Set() };
    const env = this.cluster().env(actor);
    const ctx = {
      id: { name: hosted.name, toString: () => hosted.name },
      waitUntil: (promise: Promise<unknown>) => void promise.catch(() => undefined),
      abort: () => this.reset(hosted, life),
      storage: this.storage(hosted),
    } as unknown as DurableObjectState;
    life.object = this.world.actors.run(
      actor,
      () => new ImportObject(ctx, { ...env, DB: this.resetting(env.DB, hosted, life) }),
    );
    hosted.lives.push(life);
    return life;
  }

  private storage(hosted: Hosted): object {
    return {
      get: (key: string) => Promise.resolve(hosted.values.get(key)),
      put: (key: string, value: unknown) => {
        hosted.values.set(key, structuredClone(value));
        return Promise.resolve();
      },
      getAlarm: () => Promise.resolve(hosted.alarm ?? null),
      setAlarm: (at: number | Date) => {
        this.setAlarm(hosted, typeof at === 'number' ? at : at.getTime());
        return Promise.resolve();
      },
      deleteAlarm: () => {
        hosted.alarm = undefined;
        return Promise.resolve();
      },
    };
  }

  /** Sets the object's one alarm; it fires on the world's clock whoever set it, living or not. */
  private setAlarm(hosted: Hosted, at: number): void {
    hosted.alarm = at;
    this.world.actors.exit(() => this.world.schedule(Math.max(0, at - Date.now()), () => this.deliver(hosted)));
  }

  /** Runs the alarm if it is due and no handler of the object runs (the runtime runs one at a time). */
  private deliver(hosted: Hosted): void {
    if (hosted.alarm === undefined || hosted.alarm > Date.now() || hosted.running.size > 0) return;
    hosted.alarm = undefined;
    this.injected.alarms++;
    const lives = [this.life(hosted)];
    if (this.world.chance(this.faults().twin)) lives.push(this.newLife(hosted));
    for (const life of lives) {
      hosted.running.add(life);
      void this.world.actors
        .run(life.actor, () => Promise.resolve().then(() => life.object.alarm()))
        .catch(() => undefined)
        .then(() => {
          if (!hosted.running.delete(life)) return;
          hosted.retries = 0;
          this.world.actors.exit(() => this.deliver(hosted));
        });
    }
  }

  /** This instance ends: it runs nothing more, its callers hear of it, and an alarm it ran is run again. */
  private reset(hosted: Hosted, life: Life): void {
    if (life.actor.dead) return;
    if (process.env.SIM_TRACE) console.log(`${Math.round(this.world.now)} RESET ${life.actor.name}`);
    this.injected.resets++;
    life.actor.dead = true;
    hosted.lives = hosted.lives.filter((other) => other !== life);
    for (const hear of life.waiting)
      hear(Object.assign(new Error('Durable Object reset: simulated restart'), { durableObjectReset: true }));
    life.waiting.clear();
    if (!hosted.running.delete(life)) return;
    if (hosted.alarm === undefined && hosted.retries < ALARM_RETRIES) {
      this.injected.retried++;
      this.setAlarm(hosted, Date.now() + ALARM_BACKOFF_MS * 2 ** hosted.retries++);
    } else this.world.actors.exit(() => this.deliver(hosted));
  }

  /**
   * `db` as an instance sees it: after any call it hears, the instance may reset (`crash`); after
   * a batch, which may have committed, more often (`restart`). A reset instance hears nothing more.
   */
  private resetting(db: D1Database, hosted: Hosted, life: Life): D1Database {
    const after = async <T>(call: () => Promise<T>, wrote: boolean): Promise<T> => {
      try {
        return await call();
      } catch (error) {
        if (isChunkMoved(error)) this.chunksMoved++;
        throw error;
      } finally {
        const { restart, crash } = this.faults();
        if (this.world.chance(crash) || (wrote && this.world.chance(restart))) {
          this.reset(hosted, life);
          await new Promise(() => undefined);
        }
      }
    };
    const statement = (inner: D1PreparedStatement): D1PreparedStatement =>
      new Proxy(inner, {
        get: (target, property) => {
          if (property === 'bind') return (...values: unknown[]) => statement(target.bind(...values));
          if (property === 'first' || property === 'all' || property === 'run' || property === 'raw')
            return (...args: unknown[]) =>
              after(() => (target[property] as (...a: unknown[]) => Promise<unknown>)(...args), false);
          const value = Reflect.get(target, property, target) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    return new Proxy(db, {
      get: (target, property) => {
        if (property === 'prepare') return (sql: string) => statement(target.prepare(sql));
        if (property === 'batch')
          return (statements: D1PreparedStatement[]) => after(() => target.batch(statements), true);
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
}
