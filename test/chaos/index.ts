import worker from '../../src/index.ts';
import { RecordObject as Production } from '../../src/record-object.ts';
import type { Env } from '../../src/env.ts';
import { chaosEnv, type ChaosVars } from './faults.ts';

/**
 * The chaos build: the production Worker and record object, each handed a D1 binding and record
 * objects wrapped by faults.ts. The production entry is untouched.
 */
export class RecordObject extends Production {
  constructor(ctx: DurableObjectState, env: Env & ChaosVars) {
    super(ctx, chaosEnv(env, 'object'));
  }
}

export default {
  fetch(request: Request, env: Env & ChaosVars, ctx: ExecutionContext): Promise<Response> {
    return worker.fetch(request, chaosEnv(env, 'worker'), ctx);
  },
  scheduled(controller: ScheduledController, env: Env & ChaosVars, ctx: ExecutionContext): void {
    worker.scheduled(controller, chaosEnv(env, 'worker'), ctx);
  },
} satisfies ExportedHandler<Env & ChaosVars>;
