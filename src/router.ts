import type { IRequest } from 'itty-router';
import { Router } from 'itty-router/Router';
import type { Context } from './context.ts';
import { keyHashOf } from './http/auth.ts';
import { BOOKMARK_HEADER, isBookmark, latestBookmark } from './http/bookmark.ts';
import { allowedOrigin, corsHeaders, corsPolicy, preflightHeaders } from './http/cors.ts';
import { refuseDotSegments } from './http/dot-segments.ts';
import { HttpError, invalidBookmark, isTenantNotHere, notFound } from './http/errors.ts';
import { forgetRoute } from './tenancy/routes.ts';
import { problemResponse } from './http/problem.ts';
import { limitPerKey } from './http/rate-limit.ts';
import { wakeAfterWrite } from './push/wake.ts';
import { PAGE_PATHS, pageFile } from './routes/pages.ts';
import { operations, type Handler, type Method, type Operation } from './routes/table.ts';

/**
 * Refuses a path with dot segments, and a malformed `X-D1-Bookmark`, before routing. Routes every
 * operation of the table; a known path with another method answers 405 with
 * `Allow`, an unknown path 404. Errors of every stage become problem+json in one place, and
 * every answer (errors too) gets its request id, cost, `nosniff` and, for an allowed origin, CORS headers.
 */
export function buildRouter() {
  const router = Router<IRequest, [Context]>({
    before: [refuseDotSegments, refuseBadBookmark],
    catch: (error: unknown, _request: IRequest, context: Context) => {
      // Where this isolate thought the tenant was is stale: the next request reads the catalog.
      if (isTenantNotHere(error)) forgetRoute(context.tenant.id);
      return problemResponse(error, context.requestId);
    },
    finally: [
      (response: Response, request: IRequest, context: Context) => {
        response.headers.set('X-Request-Id', context.requestId);
        // No answer is ever read as another type than the one it says (a JSON body as a page, say).
        response.headers.set('X-Content-Type-Options', 'nosniff');
        // A streamed answer states its own (its cost is known only once the stream ends).
        if (!response.headers.has('Server-Timing'))
          response.headers.set('Server-Timing', context.meter.header(response.status !== 404));
        // The newest state this answer reflects (a write: its commit), else the one the client sent.
        const bookmark = latestBookmark(context.meter.newestBookmark(), request.headers.get(BOOKMARK_HEADER));
        if (bookmark !== undefined) response.headers.set(BOOKMARK_HEADER, bookmark);
        const origin = allowedOrigin(corsPolicy(context.env.CORS_ORIGINS), request.headers.get('Origin'));
        if (origin !== undefined)
          for (const [name, value] of Object.entries(corsHeaders(origin))) response.headers.set(name, value);
        wakeAfterWrite(response, context);
        return response;
      },
    ],
  });
  for (const path of PAGE_PATHS) router.all(path, pageFile);
  const allowed = new Map<string, Method[]>();
  for (const op of operations) allowed.set(op.path, [...(allowed.get(op.path) ?? []), op.method]);
  for (const [path, methods] of allowed) {
    for (const op of operations.filter((o) => o.path === path)) {
      router[op.method.toLowerCase()]?.(path, op.auth === 'key' ? rateLimited(op) : op.handler);
    }
    const notAllowed = (): never => {
      throw new HttpError(405, {
        code: 'method_not_allowed',
        title: 'Method not allowed',
        detail: `Allowed: ${methods.join(', ')}.`,
        headers: {
          Allow: methods.join(', '),
        },
      });
    };
    router.options(path, (request: IRequest, context: Context) => {
      const origin = allowedOrigin(corsPolicy(context.env.CORS_ORIGINS), request.headers.get('Origin'));
      if (origin === undefined) return notAllowed();
      return new Response(null, { status: 204, headers: preflightHeaders(origin, methods) });
    });
    router.all(path, notAllowed);
  }
  router.all('*', () => {
    throw notFound();
  });
  return router;
}

/** A bookmark that D1 did not give is refused before anything is read or written. */
function refuseBadBookmark(request: IRequest): void {
  const sent = request.headers.get(BOOKMARK_HEADER);
  if (sent !== null && !isBookmark(sent)) throw invalidBookmark();
}

/**
 * Operations with an API key pass the key's rate limit first: a limited request reads and writes
 * nothing. One opened with a ticket instead was limited when its key asked for the ticket.
 */
function rateLimited({ handler, ticket }: Operation): Handler {
  return async (request, context) => {
    const { env } = context;
    const byTicket = ticket === true && !request.headers.has('Authorization');
    if (env.RATE_LIMITS !== 'off' && !byTicket)
      await limitPerKey(env.RATE_LIMITER, await keyHashOf(request), env.RATE_LIMIT_PERIOD);
    return handler(request, context);
  };
}
