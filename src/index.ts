import { createContext } from './context.ts';
import type { Env } from './env.ts';
import { requestIdOf } from './http/request-id.ts';
import { buildRouter } from './router.ts';
import { runScheduled } from './scheduled.ts';

export { RecordObject } from './record-object.ts';
export { WebhookObject } from './webhook-object.ts';

const router = buildRouter();

export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    return router.fetch(request, createContext(env, requestIdOf(request), ctx));
  },
  scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext): void {
    ctx.waitUntil(runScheduled(env, controller.scheduledTime));
  },
} satisfies ExportedHandler<Env>;
