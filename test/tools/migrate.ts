import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Applies the migrations to every D1 database of a wrangler configuration (each
 * `[[d1_databases]]` binding: DB and the others records are served from), as `npm start`,
 * `npm run deploy` and the end-to-end server need. Usage:
 * `node test/tools/migrate.ts --local|--remote [--config wrangler.toml] [--persist-to DIR]`.
 */

const WRANGLER = fileURLToPath(new URL('../../node_modules/wrangler/bin/wrangler.js', import.meta.url));

/** The D1 bindings of a wrangler.toml, in their order. */
export function d1Bindings(toml: string): string[] {
  return toml
    .split(/^\[\[/m)
    .filter((block) => block.startsWith('d1_databases]]'))
    .flatMap((block) => /^\s*binding\s*=\s*"([^"]+)"/m.exec(block)?.[1] ?? []);
}

/** Migrates each database; throws with wrangler's output when one fails. */
export function migrateAll(args: { where: '--local' | '--remote'; config: string; persistTo?: string }): void {
  const env = { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' };
  for (const binding of d1Bindings(readFileSync(args.config, 'utf8'))) {
    const extra = args.persistTo === undefined ? [] : ['--persist-to', args.persistTo];
    const run = spawnSync(
      process.execPath,
      [WRANGLER, 'd1', 'migrations', 'apply', binding, args.where, '--config', args.config, ...extra],
      { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    if (run.status !== 0) throw new Error(`migrations of ${binding} failed: ${run.stderr}${run.stdout}`);
    console.log(`${binding}: migrated`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const argv = process.argv.slice(2);
  const option = (name: string) => {
    const at = argv.indexOf(name);
    return at < 0 ? undefined : argv[at + 1];
  };
  const persistTo = option('--persist-to');
  migrateAll({
    where: argv.includes('--remote') ? '--remote' : '--local',
    config: option('--config') ?? 'wrangler.toml',
    ...(persistTo === undefined ? {} : { persistTo }),
  });
}
