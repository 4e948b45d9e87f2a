import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The first `npm start` of a clone: without `.dev.vars`, writes it from `.dev.vars.example` (the
 * admin token `dev-admin-token`, a random cursor secret) and says so, so the admin API answers at
 * once. An existing `.dev.vars` is never touched. Local only: production secrets are set with
 * `wrangler secret put`.
 */

/** The example's text with each placeholder (`replace-with-…`) given a random value. */
export function devVarsFrom(example: string, random: () => string): string {
  return example.replace(/=replace-with-[\w-]+/g, () => `=${random()}`);
}

export function ensureDevVars(dir: string): string | undefined {
  const target = `${dir}.dev.vars`;
  if (existsSync(target)) return undefined;
  const text = devVarsFrom(readFileSync(`${dir}.dev.vars.example`, 'utf8'), () => randomBytes(32).toString('hex'));
  writeFileSync(target, text, { mode: 0o600 });
  return target;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const made = ensureDevVars(fileURLToPath(new URL('../../', import.meta.url).href));
  if (made !== undefined)
    console.log('Wrote .dev.vars from .dev.vars.example: the admin API takes "Bearer dev-admin-token" locally.');
}
