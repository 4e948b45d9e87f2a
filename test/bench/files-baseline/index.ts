/**
 * Baseline Worker of `npm run bench:files`: `PUT /files/{key}` streams the body into R2 and `GET
 * /files/{key}` streams it back. Nothing else: what a file's upload and download cost at the least.
 */
interface Env {
  FILES: R2Bucket;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/health') return Response.json({ status: 'ok' });
    const key = /^\/files\/([A-Za-z0-9-]+)$/.exec(url.pathname)?.[1];
    if (key === undefined) return new Response('not found', { status: 404 });
    if (request.method === 'PUT') {
      const length = Number(request.headers.get('Content-Length'));
      const fixed = new FixedLengthStream(length);
      const piping = request.body?.pipeTo(fixed.writable);
      await env.FILES.put(key, fixed.readable);
      await piping;
      return Response.json({ key, size: length }, { status: 201 });
    }
    const object = await env.FILES.get(key);
    if (object === null) return new Response('not found', { status: 404 });
    return new Response(object.body, { headers: { 'Content-Length': String(object.size) } });
  },
};
