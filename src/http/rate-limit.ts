import { HttpError } from './errors.ts';

/**
 * Requests per API key through Cloudflare's Rate Limiting binding. The binding
 * only says yes or no, not when the window ends, so `Retry-After` is the window's length
 * (`period` of `[[ratelimits]]` in wrangler.toml, mirrored by the RATE_LIMIT_PERIOD var).
 */
export async function limitPerKey(
  limiter: RateLimit | undefined,
  keyHash: string,
  periodSeconds: string | undefined,
): Promise<void> {
  if (limiter === undefined) return;
  const { success } = await limiter.limit({ key: keyHash });
  if (success) return;
  const retryAfter = /^[0-9]+$/.test(periodSeconds ?? '') ? (periodSeconds as string) : '60';
  throw new HttpError(429, {
    code: 'rate_limited',
    title: 'Too many requests',
    detail: `This API key sent too many requests; retry after ${retryAfter} s.`,
    headers: {
      'Retry-After': retryAfter,
    },
  });
}
