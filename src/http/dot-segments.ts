import { HttpError } from './errors.ts';

/** `.` or `..`, plain or percent-encoded in any case (`%2e`, `.%2E`, `%2e%2e`). */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/**
 * Whether the path of a URL text holds a dot segment. Read on the text, before any URL parser
 * resolves it (`new URL` turns `/workspaces/%2e%2e/records/5` into `/records/5`); `\` separates
 * segments as it does for http URLs.
 */
export function hasDotSegments(url: string): boolean {
  const path = url.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#\\]*/, '').split(/[?#]/)[0] ?? '';
  return path.split(/[\\/]/).some((segment) => DOT_SEGMENT.test(segment));
}

/**
 * A path with dot segments is never resolved into another route: 400 before routing. (Where the
 * runtime already resolved them, the Worker sees the resolved path and this finds nothing.)
 */
export function refuseDotSegments(request: Request): undefined {
  if (!hasDotSegments(request.url)) return undefined;
  throw new HttpError(400, {
    code: 'invalid_request',
    title: 'Path has dot segments',
    detail: 'A path with `.` or `..` segments (plain or percent-encoded) names no resource here.',
  });
}
