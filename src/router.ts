import type { IRequest } from 'itty-router';
import { Router } from 'itty-router/Router';
import type { Context } from './context.ts';
import { HttpError, notFound } from './http/errors.ts';
import { problemResponse } from './http/problem.ts';
import { operations, type Method } from './routes/table.ts';

/**
 * Routes every operation of the table; a known path with another method answers 405 with
 * `Allow`, an unknown path 404. Errors of every stage become problem+json in one place.
 */
export function buildRouter() {
  const router = Router<IRequest, [Context]>({
    catch: (error: unknown, _request: IRequest, context: Context) => problemResponse(error, context.requestId),
    finally: [
      (response: Response, _request: IRequest, context: Context) => {
        response.headers.set('X-Request-Id', context.requestId);
        response.headers.set('Server-Timing', context.meter.header());
        return response;
      },
    ],
  });
  const allowed = new Map<string, Method[]>();
  for (const op of operations) allowed.set(op.path, [...(allowed.get(op.path) ?? []), op.method]);
  for (const [path, methods] of allowed) {
    for (const op of operations.filter((o) => o.path === path)) router[op.method.toLowerCase()]?.(path, op.handler);
    router.all(path, () => {
      throw new HttpError(405, 'method_not_allowed', 'Method not allowed', `Allowed: ${methods.join(', ')}.`, undefined, {
        Allow: methods.join(', '),
      });
    });
  }
  router.all('*', () => {
    throw notFound();
  });
  return router;
}
