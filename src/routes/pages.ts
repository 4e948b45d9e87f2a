import page from '../docs/index.html';
import redoc from '../docs/redoc.standalone.js.txt';
import licence from '../docs/redoc.standalone.js.LICENSE.txt';
import consolePage from '../console/index.html';
import { sha256Hex } from '../http/auth.ts';
import { HttpError, notFound } from '../http/errors.ts';

/**
 * The pages for people: /docs, the API reference that Redoc renders in the browser from
 * /openapi.json, and /console, where people work with their records through the public API. The
 * Worker answers them from text bundled with it, not from static assets: a Worker with assets has
 * every request looked up among them first, which cost the hot paths a quarter of their
 * throughput for three files. Need no key; GET and HEAD, with an ETag for revalidation.
 */
const files: Record<string, { body: string; type: string; cache: string }> = {
  '/docs': { body: page, type: 'text/html; charset=utf-8', cache: 'public, max-age=3600' },
  '/docs/redoc.standalone.js': { body: redoc, type: 'text/javascript; charset=utf-8', cache: 'public, max-age=3600' },
  '/docs/redoc.standalone.js.LICENSE.txt': {
    body: licence,
    type: 'text/plain; charset=utf-8',
    cache: 'public, max-age=3600',
  },
  // Revalidated on every visit (a 304 when unchanged): a deploy's console is the one people get.
  '/console': { body: consolePage, type: 'text/html; charset=utf-8', cache: 'no-cache' },
};

/** The pages' paths, and `/docs/` and `/console/`, which redirect to them. */
export const PAGE_PATHS = [...Object.keys(files), '/docs/', '/console/'];

/** Each file's ETag, computed on its first request (hashing the bundle at start would slow every cold start). */
const etags = new Map<string, Promise<string>>();

/** One of the pages' files: GET and HEAD only; `If-None-Match` with its ETag answers 304. */
export async function pageFile(request: Request): Promise<Response> {
  const path = new URL(request.url).pathname;
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    throw new HttpError(405, {
      code: 'method_not_allowed',
      title: 'Method not allowed',
      detail: 'Allowed: GET, HEAD.',
      headers: { Allow: 'GET, HEAD' },
    });
  }
  if (path.endsWith('/')) return new Response(null, { status: 308, headers: { Location: path.slice(0, -1) } });
  const file = files[path];
  if (file === undefined) throw notFound();
  let etag = etags.get(path);
  if (etag === undefined) etags.set(path, (etag = sha256Hex(file.body).then((hash) => `"${hash.slice(0, 32)}"`)));
  const headers = {
    'Content-Type': file.type,
    'Cache-Control': file.cache,
    ETag: await etag,
    // A page where people paste keys is never shown inside another site's frame.
    'X-Frame-Options': 'DENY',
  };
  if (request.headers.get('If-None-Match') === headers.ETag) return new Response(null, { status: 304, headers });
  return new Response(request.method === 'HEAD' ? null : file.body, { headers });
}
