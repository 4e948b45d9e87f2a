import worker from '../../src/index.ts';
import { RecordObject as Production } from '../../src/record-object.ts';
import { WebhookObject as ProductionWebhook } from '../../src/webhook-object.ts';
import { IndexBuildObject as ProductionIndexBuild } from '../../src/index-build-object.ts';
import { ImportObject as ProductionImport } from '../../src/import-object.ts';
import { TenantObject as ProductionTenant } from '../../src/tenant-object.ts';
import { LiveObject as ProductionLive } from '../../src/live-object.ts';
import { importChunk } from '../../src/write/import-chunk.ts';
import type { Env } from '../../src/env.ts';
import { databaseNames } from '../../src/tenancy/routes.ts';
import { loggingD1 } from '../d1-log.ts';
import { withProductionLimits } from '../limits.ts';

/**
 * The test build: the production Worker and record object, with a D1 binding that refuses what
 * production D1 refuses (test/limits.ts) and notes where each statement ran (test/d1-log.ts).
 * Everything else is the production entry as it is.
 */
const limited = (env: Env): Env => {
  const wrapped: Record<string, unknown> = { ...env };
  for (const name of databaseNames(env)) {
    const db = (env as unknown as Record<string, D1Database | undefined>)[name];
    if (db !== undefined) wrapped[name] = loggingD1(withProductionLimits(db));
  }
  return wrapped as unknown as Env;
};

export class RecordObject extends Production {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, limited(env));
  }
}

/** The production delivery object, on the limited D1, and able to be restarted by a test. */
export class WebhookObject extends ProductionWebhook {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, limited(env));
  }

  /** Resets the object as a crash or a deploy would: its memory and whatever it had in flight are lost. */
  restart(): void {
    this.ctx.abort('test: restart');
  }
}

/**
 * The production index builder, on the limited D1. A test may hold it (its alarms then do
 * nothing), run its steps one at a time, restart it, and let it go on by itself.
 */
export class IndexBuildObject extends ProductionIndexBuild {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, limited(env));
  }

  override async alarm(): Promise<void> {
    if ((await this.ctx.storage.get('held')) === true) return;
    return super.alarm();
  }

  async hold(): Promise<void> {
    await this.ctx.storage.put('held', true);
  }

  /** No longer held, but with no alarm set: as if its start had been lost. */
  async unhold(): Promise<void> {
    await this.ctx.storage.delete('held');
    await this.ctx.storage.deleteAlarm();
  }

  /** One step, as an alarm would run it: false when no build was due. */
  async stepOnce(objectId: number): Promise<boolean> {
    return (await this.step(objectId)) !== undefined;
  }

  async release(objectId: number): Promise<void> {
    await this.ctx.storage.delete('held');
    await this.start(objectId);
  }

  restart(): void {
    this.ctx.abort('test: restart');
  }
}

/**
 * The production import object, on the limited D1. A test may hold it (its alarms then do
 * nothing) and run its chunks one at a time, some of them losing D1's reply after the chunk
 * committed, as a dropped connection or a restart right after the commit would.
 */
export class ImportObject extends ProductionImport {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, limited(env));
  }

  override async alarm(): Promise<void> {
    if ((await this.ctx.storage.get('held')) === true) return;
    return super.alarm();
  }

  async hold(): Promise<void> {
    await this.ctx.storage.put('held', true);
  }

  /** One chunk; `loseReply`: its D1 batch commits, and then the call fails as if the reply were lost. */
  async stepOnce(id: number, loseReply = false): Promise<{ more: boolean; error?: string }> {
    const env = limited(this.env);
    const db = env.DB;
    const losing: Env = !loseReply
      ? env
      : {
          ...env,
          DB: {
            ...db,
            prepare: (sql: string) => db.prepare(sql),
            batch: async (statements: D1PreparedStatement[]) => {
              await db.batch(statements);
              throw new Error('Network connection lost.');
            },
          } as unknown as D1Database,
        };
    try {
      return { more: (await importChunk(losing, id)).more };
    } catch (error) {
      return { more: true, error: String(error) };
    }
  }

  async release(id: number): Promise<void> {
    await this.ctx.storage.delete('held');
    await this.start(id);
  }
}

/** The production tenant object, on the limited D1. */
/** What a test breaks on purpose: a move's writes to the database it moves to fail while set. */
export const sabotage = { target: '' };

/** `env` whose database named by `sabotage.target` fails every batch and statement run, as an outage would. */
const breakable = (env: Env): Env => {
  const wrapped: Record<string, unknown> = { ...env };
  for (const name of databaseNames(env)) {
    const db = (env as unknown as Record<string, D1Database>)[name] as D1Database;
    const down = (): Error => new Error('D1_ERROR: test: the database is down: SQLITE_ERROR');
    wrapped[name] = new Proxy(db, {
      get(target, property) {
        if (property === 'batch')
          return (statements: D1PreparedStatement[]) =>
            sabotage.target === name ? Promise.reject(down()) : target.batch(statements);
        if (property === 'withSession')
          return (start?: string) => {
            const session = target.withSession(start);
            return new Proxy(session, {
              get(inner, name2) {
                if (name2 === 'batch')
                  return (statements: D1PreparedStatement[]) =>
                    sabotage.target === name ? Promise.reject(down()) : inner.batch(statements);
                const value = Reflect.get(inner, name2) as unknown;
                return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(inner) : value;
              },
            });
          };
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
  return wrapped as unknown as Env;
};

/**
 * The production tenant object, on the limited D1. A test may hold it (its alarms then do
 * nothing) and run a move's steps one at a time, and make a database fail under it.
 */
export class TenantObject extends ProductionTenant {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, limited(breakable(env)));
  }

  override async alarm(): Promise<void> {
    if ((await this.ctx.storage.get('held')) === true) return;
    return super.alarm();
  }

  async hold(): Promise<void> {
    await this.ctx.storage.put('held', true);
  }

  async release(): Promise<void> {
    await this.ctx.storage.delete('held');
    await this.ctx.storage.setAlarm(Date.now());
  }

  /** One step, as an alarm would run it: when the next is due (ms since the epoch), if one is. */
  async stepOnce(): Promise<number | null> {
    await super.alarm();
    return this.ctx.storage.getAlarm();
  }
}

/** The production live object, on the limited D1, and able to be restarted by a test. */
export class LiveObject extends ProductionLive {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, limited(env));
  }

  /** Resets the object as a crash or a deploy would: its memory is lost (its WebSockets are closed). */
  restart(): void {
    this.ctx.abort('test: restart');
  }

  /** While deaf, every wake-up is lost, as one dropped on the way would be. */
  async deafen(deaf: boolean): Promise<void> {
    await this.ctx.storage.put('deaf', deaf);
  }

  override async wake(workspaceId: number): Promise<void> {
    if ((await this.ctx.storage.get('deaf')) === true) return;
    return super.wake(workspaceId);
  }
}

export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext): Promise<Response> =>
    worker.fetch(request, limited(env), ctx),
  scheduled: (controller: ScheduledController, env: Env, ctx: ExecutionContext): void =>
    worker.scheduled(controller, limited(env), ctx),
} satisfies ExportedHandler<Env>;
