import page from '../docs/index.html';
import redoc from '../docs/redoc.standalone.js.txt';
import licence from '../docs/redoc.standalone.js.LICENSE.txt';

/**
 * /docs: the API reference, a page that Redoc renders in the browser from /openapi.json. The
 * Worker answers it from text bundled with it, not from static assets: a Worker with assets has
 * every request looked up among them first, which cost the hot paths a quarter of their
 * throughput for three files. Needs no key.
 */
const files: Record<string, { body: string; type: string }> = {
  '/docs': { body: page, type: 'text/html; charset=utf-8' },
  '/docs/redoc.standalone.js': { body: redoc, type: 'text/javascript; charset=utf-8' },
  '/docs/redoc.standalone.js.LICENSE.txt': { body: licence, type: 'text/plain; charset=utf-8' },
};

export const DOCS_PATHS = Object.keys(files);

/** GET of one of the docs' files. */
export function docsFile(request: Request): Response {
  const file = files[new URL(request.url).pathname];
  if (file === undefined) return new Response(null, { status: 404 });
  return new Response(file.body, {
    headers: { 'Content-Type': file.type, 'Cache-Control': 'public, max-age=3600' },
  });
}
