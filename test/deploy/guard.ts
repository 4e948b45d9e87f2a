import { readFileSync } from 'node:fs';

/**
 * Runs before `npm run deploy` contacts Cloudflare: refuses a wrangler.toml whose D1
 * database_id is still the placeholder (wrangler's own `deploy --dry-run` accepts it, and a
 * real deploy would fail only after migrations were attempted against a database that does
 * not exist). Exit 1 with a message saying what to do; exit 0 when the id looks real.
 */
export const PLACEHOLDER_ID = '00000000-0000-0000-0000-000000000000';
/** The ids wrangler.toml ships with (one per database: …000, …002, …003): none is a real database. */
const PLACEHOLDER = /^00000000-0000-0000-0000-0000000000[0-9]{2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function deployProblem(toml: string): string | undefined {
  const blocks = toml.split(/^\[\[/m).filter((block) => block.startsWith('d1_databases]]'));
  const ids = blocks.flatMap((block) => {
    const id = /^\s*database_id\s*=\s*"([^"]*)"/m.exec(block)?.[1];
    const name = /^\s*database_name\s*=\s*"([^"]*)"/m.exec(block)?.[1] ?? 'record-service';
    return id === undefined ? [] : [{ id, name }];
  });
  if (ids.length === 0) return 'wrangler.toml has no D1 database_id.';
  const bad = ids.find(({ id }) => PLACEHOLDER.test(id) || !UUID.test(id));
  if (bad === undefined) return undefined;
  return (
    `wrangler.toml still has database_id = "${bad.id}", not a real D1 database.\n` +
    `Create one with \`npx wrangler d1 create ${bad.name} --location <region>\` and copy the\n` +
    'database_id it prints into wrangler.toml ([[d1_databases]]), then run `npm run deploy` again.'
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const config = process.argv[2] ?? 'wrangler.toml';
  const problem = deployProblem(readFileSync(config, 'utf8'));
  if (problem !== undefined) {
    console.error(`Refusing to deploy: ${problem}`);
    process.exit(1);
  }
}
