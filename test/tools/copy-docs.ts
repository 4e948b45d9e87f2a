import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Copies Redoc's standalone bundle (MIT, from the `redoc` devDependency) and its licence beside
 * the /docs page (src/docs/), as text the Worker imports and serves. It is a build output: git
 * ignores it, and `npm start`, `npm test`, `npm run deploy` and the end-to-end server run this first.
 */
const from = fileURLToPath(new URL('../../node_modules/redoc/bundles/redoc.standalone.js', import.meta.url));
const into = fileURLToPath(new URL('../../src/docs/', import.meta.url));

export function copyDocs(): void {
  mkdirSync(into, { recursive: true });
  const target = `${into}redoc.standalone.js.txt`;
  if (existsSync(target) && readFileSync(target).equals(readFileSync(from))) return;
  copyFileSync(from, target);
  copyFileSync(`${from}.LICENSE.txt`, `${into}redoc.standalone.js.LICENSE.txt`);
}

if (import.meta.url === `file://${process.argv[1]}`) copyDocs();
