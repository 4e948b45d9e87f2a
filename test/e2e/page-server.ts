import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';

/**
 * Serves test/e2e/browser.html at `/` (a page needs an http origin for CORS). `npm run page`
 * serves it on http://localhost:8000; the e2e suite serves it on a free port.
 */
export function servePage(port: number, host = '127.0.0.1'): Promise<Server> {
  const page = readFileSync(new URL('./browser.html', import.meta.url));
  const server = createServer((request, response) => {
    if (new URL(request.url ?? '/', 'http://x').pathname !== '/') return void response.writeHead(404).end();
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const port = Number(process.env.PORT ?? 8000);
  await servePage(port, 'localhost');
  console.log(
    `The browser page: http://localhost:${port}/ (start the service with --var CORS_ORIGINS:http://localhost:${port})`,
  );
}
