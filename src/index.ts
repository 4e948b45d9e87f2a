import { createContext } from './context.ts';
import type { Env } from './env.ts';
import { BOOKMARK_HEADER, sessionStart } from './http/bookmark.ts';
import { requestIdOf } from './http/request-id.ts';
import { buildRouter } from './router.ts';
import { runScheduled } from './scheduled.ts';
import { revocationFloor } from './storage/sessions.ts';
import { tenantOfRequest } from './http/tenant.ts';
import { problemResponse } from './http/problem.ts';

export { RecordObject } from './record-object.ts';
export { WebhookObject } from './webhook-object.ts';
export { IndexBuildObject } from './index-build-object.ts';
export { ImportObject } from './import-object.ts';
export { TenantObject } from './tenant-object.ts';
export { LiveObject } from './live-object.ts';

const router = buildRouter();

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const path = new URL(request.url).pathname;
    const reads = sessionStart(request.method, path, request.headers.get(BOOKMARK_HEADER), revocationFloor());
    const requestId = requestIdOf(request);
    const tenant = await tenantOfRequest(request, env).catch((error: unknown) => problemResponse(error, requestId));
    if (tenant instanceof Response) {
      tenant.headers.set('X-Request-Id', requestId);
      tenant.headers.set('X-Content-Type-Options', 'nosniff');
      return tenant;
    }
    return router.fetch(request, createContext(env, requestId, ctx, reads, undefined, tenant));
  },
  scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext): void {
    ctx.waitUntil(runScheduled(env, controller.scheduledTime));
  },
} satisfies ExportedHandler<Env>;
