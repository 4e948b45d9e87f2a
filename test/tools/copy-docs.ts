import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Copies Redoc's standalone bundle (MIT, from the `redoc` devDependency) beside the /docs page,
 * into the static assets the Worker serves (src/docs-assets/). It is a build output: git ignores
 * it, and `npm start`, `npm test`, `npm run deploy` and the end-to-end server run this first.
 */
const from = fileURLToPath(new URL('../../node_modules/redoc/bundles/redoc.standalone.js', import.meta.url));
const into = fileURLToPath(new URL('../../src/docs-assets/docs/', import.meta.url));

export function copyDocs(): void {
  mkdirSync(into, { recursive: true });
  const target = `${into}redoc.standalone.js`;
  if (existsSync(target) && readFileSync(target).equals(readFileSync(from))) return;
  copyFileSync(from, target);
  copyFileSync(`${from}.LICENSE.txt`, `${target}.LICENSE.txt`);
}

if (import.meta.url === `file://${process.argv[1]}`) copyDocs();
