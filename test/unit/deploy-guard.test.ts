import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { deployProblem } from '../deploy/guard.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const GUARD = join(ROOT, 'test', 'deploy', 'guard.ts');
const shipped = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8');
const withId = (id: string): string => shipped.replaceAll(/database_id = "[^"]*"/g, `database_id = "${id}"`);

describe('npm run deploy refuses the placeholder database_id', () => {
  it('the shipped wrangler.toml is refused by the guard script, with a message and exit code 1', () => {
    const run = spawnSync(process.execPath, [GUARD], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      'Refusing to deploy: wrangler.toml still has database_id = "00000000-0000-0000-0000-000000000000"',
    );
    expect(run.stderr).toContain('npx wrangler d1 create record-service');
  });

  it('passes a real-looking id and runs before wrangler in npm run deploy', () => {
    const dir = mkdtempSync(join(tmpdir(), 'deploy-guard-'));
    writeFileSync(join(dir, 'wrangler.toml'), withId('8c3b1e5a-2f4d-4e6b-9a7c-1d2e3f4a5b6c'));
    const run = spawnSync(process.execPath, [GUARD, join(dir, 'wrangler.toml')], { encoding: 'utf8' });
    expect([run.status, run.stderr]).toEqual([0, '']);
    const deploy: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.deploy;
    expect(deploy.indexOf('node test/deploy/guard.ts &&')).toBeGreaterThan(-1);
    expect(deploy.indexOf('guard.ts')).toBeLessThan(deploy.indexOf('wrangler'));
  });

  it('names what is wrong: no id, the placeholder, or not a UUID', () => {
    expect(deployProblem('[[d1_databases]]\nbinding = "DB"')).toBe('wrangler.toml has no D1 database_id.');
    expect(deployProblem(withId('00000000-0000-0000-0000-000000000000'))).toMatch(/still has database_id/);
    expect(deployProblem(withId('my-database'))).toMatch(/database_id = "my-database"/);
    expect(deployProblem(withId('8C3B1E5A-2F4D-4E6B-9A7C-1D2E3F4A5B6C'))).toBeUndefined();
  });
});
