/**
 * CORS from the `CORS_ORIGINS` var. Pure functions; the router applies them.
 * Written here rather than taken from itty-router's `cors()`, whose `corsify` rebuilds every
 * response with status 200 (a 404 or 412 would reach a browser as a success).
 */

export const ALLOW_HEADERS = 'Authorization, Content-Type, If-Match, Idempotency-Key, X-Request-Id, X-D1-Bookmark';
export const EXPOSE_HEADERS = 'ETag, X-Request-Id, Server-Timing, Retry-After, Idempotent-Replayed, X-D1-Bookmark';
export const MAX_AGE_SECONDS = 600;

/** `*` for any origin, else the listed origins; undefined when the var is absent or empty (no CORS). */
export type CorsPolicy = '*' | ReadonlySet<string>;

export function corsPolicy(setting: string | undefined): CorsPolicy | undefined {
  const origins = (setting ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  if (origins.length === 0) return undefined;
  return origins.includes('*') ? '*' : new Set(origins);
}

/** The `Access-Control-Allow-Origin` value for a request's `Origin`, or undefined: no CORS headers. */
export function allowedOrigin(policy: CorsPolicy | undefined, origin: string | null): string | undefined {
  if (policy === undefined || origin === null) return undefined;
  if (policy === '*') return '*';
  return policy.has(origin) ? origin : undefined;
}

/** Headers of every answer to an allowed origin. */
export function corsHeaders(allowed: string): Record<string, string> {
  return {
    'Access-Control-Allow-Origin': allowed,
    'Access-Control-Expose-Headers': EXPOSE_HEADERS,
    // The answer depends on the request's Origin whenever it is not the same for all.
    ...(allowed === '*' ? {} : { Vary: 'Origin' }),
  };
}

/** The answer to a preflight of an allowed origin, on a path that takes `methods`. */
export function preflightHeaders(allowed: string, methods: readonly string[]): Record<string, string> {
  return {
    ...corsHeaders(allowed),
    'Access-Control-Allow-Methods': methods.join(', '),
    'Access-Control-Allow-Headers': ALLOW_HEADERS,
    'Access-Control-Max-Age': String(MAX_AGE_SECONDS),
  };
}
