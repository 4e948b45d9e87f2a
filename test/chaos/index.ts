import worker from '../../src/index.ts';
import { RecordObject as Production } from '../../src/record-object.ts';
import type { Env } from '../../src/env.ts';

// Webhook deliveries are not under chaos here: the production class as it is.
export { WebhookObject } from '../../src/webhook-object.ts';
export { IndexBuildObject } from '../../src/index-build-object.ts';
export { TenantObject } from '../../src/tenant-object.ts';
export { LiveObject } from '../../src/live-object.ts';
import { ImportObject as ProductionImport } from '../../src/import-object.ts';
import { chaosEnv, type ChaosVars } from './faults.ts';

/**
 * The chaos build: the production Worker and record object, each handed a D1 binding and record
 * objects wrapped by faults.ts. The production entry is untouched.
 */
export class RecordObject extends Production {
  constructor(ctx: DurableObjectState, env: Env & ChaosVars) {
    // CHAOS_RESTART: the object resets itself (losing its memory and every call in flight)
    // after a write commits and before it answers.
    super(
      ctx,
      chaosEnv(env, 'object', undefined, () => ctx.abort('chaos: restart after commit')),
    );
  }
}

/**
 * The production import object on faulty D1 and record objects; CHAOS_RESTART (or a test's
 * decision) resets it right after a chunk commits, before it hears so.
 */
export class ImportObject extends ProductionImport {
  constructor(ctx: DurableObjectState, env: Env & ChaosVars) {
    super(
      ctx,
      chaosEnv(env, 'object', undefined, () => ctx.abort('chaos: restart after commit')),
    );
  }
}

export default {
  /**
   * Answers carry `Chaos-Faults`: how many faults the Worker's own D1 and object calls met while
   * serving this request, so a history check can prove the faults happened even when the
   * service absorbed them all.
   */
  async fetch(request: Request, env: Env & ChaosVars, ctx: ExecutionContext): Promise<Response> {
    let faults = 0;
    const answer = await worker.fetch(
      request,
      chaosEnv(env, 'worker', () => faults++),
      ctx,
    );
    const counted = new Response(answer.body, answer);
    counted.headers.set('Chaos-Faults', String(faults));
    return counted;
  },
  scheduled(controller: ScheduledController, env: Env & ChaosVars, ctx: ExecutionContext): void {
    worker.scheduled(controller, chaosEnv(env, 'worker'), ctx);
  },
} satisfies ExportedHandler<Env & ChaosVars>;
