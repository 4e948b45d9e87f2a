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
const files: Record<string, { body: string; type: string; cache: string; policy?: (body: string) => Promise<string> }> =
  {
    '/docs': { body: page, type: 'text/html; charset=utf-8', cache: 'public, max-age=3600', policy: docsPolicy },
    '/docs/redoc.standalone.js': { body: redoc, type: 'text/javascript; charset=utf-8', cache: 'public, max-age=3600' },
    '/docs/redoc.standalone.js.LICENSE.txt': {
      body: licence,
      type: 'text/plain; charset=utf-8',
      cache: 'public, max-age=3600',
    },
    // Revalidated on every visit (a 304 when unchanged): a deploy's console is the one people get.
    '/console': { body: consolePage, type: 'text/html; charset=utf-8', cache: 'no-cache', policy: consolePolicy },
  };

/** What every page's policy says: nothing framed, no base, no form sent, calls to this service alone. */
const PAGE_RULES = "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * /docs: Redoc's bundle, served beside it, is its only script; Redoc writes its styles into the
 * page as it renders (so styles may be inline, scripts never).
 */
async function docsPolicy(): Promise<string> {
  return (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
    `font-src 'self' data:; worker-src 'self' blob:; ${PAGE_RULES}`
  );
}

/** /console: its own inline script and style, by their hashes, and nothing else. */
async function consolePolicy(body: string): Promise<string> {
  const [scripts, styles] = await Promise.all([inlineHashes(body, 'script'), inlineHashes(body, 'style')]);
  return `default-src 'none'; script-src ${scripts}; style-src ${styles}; img-src 'self' data: blob:; ${PAGE_RULES}`;
}

/** The hash sources (`'sha256-…'`) of the inline `<tag>` blocks of a page, as a policy names them. */
async function inlineHashes(html: string, tag: 'script' | 'style'): Promise<string> {
  const blocks = [...html.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => m[1] ?? '');
  const hashes = await Promise.all(
    blocks.map(async (block) => {
      const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(block)));
      return `'sha256-${btoa(String.fromCharCode(...digest))}'`;
    }),
  );
  return hashes.length === 0 ? "'none'" : hashes.join(' ');
}

/** The pages' paths, and `/docs/` and `/console/`, which redirect to them. */
export const PAGE_PATHS = [...Object.keys(files), '/docs/', '/console/'];

/** Each file's ETag, computed on its first request (hashing the bundle at start would slow every cold start). */
const etags = new Map<string, Promise<string>>();
/** Each page's Content-Security-Policy, likewise. */
const policies = new Map<string, Promise<string>>();

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
  let policy = policies.get(path);
  if (policy === undefined && file.policy !== undefined) policies.set(path, (policy = file.policy(file.body)));
  const headers: Record<string, string> = {
    'Content-Type': file.type,
    'Cache-Control': file.cache,
    ETag: await etag,
    // A page where people paste keys is never shown inside another site's frame.
    'X-Frame-Options': 'DENY',
    ...(policy === undefined ? {} : { 'Content-Security-Policy': await policy }),
  };
  if (request.headers.get('If-None-Match') === headers.ETag) return new Response(null, { status: 304, headers });
  return new Response(request.method === 'HEAD' ? null : file.body, { headers });
}
