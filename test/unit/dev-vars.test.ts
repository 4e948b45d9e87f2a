import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { devVarsFrom, ensureDevVars } from '../tools/dev-vars.ts';

const example = readFileSync(new URL('../../.dev.vars.example', import.meta.url).pathname, 'utf8');

describe('the first npm start writes .dev.vars', () => {
  it('from the example: the admin token set, every placeholder a random value', () => {
    const text = devVarsFrom(example, () => 'r4nd0m');
    expect(text).toMatch(/^ADMIN_TOKEN=dev-admin-token$/m);
    expect(text).toMatch(/^CURSOR_SECRET=r4nd0m$/m);
    expect(text).not.toContain('replace-with');
  });

  it('once: an existing .dev.vars is left as it is', () => {
    const dir = `${mkdtempSync(`${tmpdir()}/dev-vars-`)}/`;
    writeFileSync(`${dir}.dev.vars.example`, example);
    expect(ensureDevVars(dir)).toBe(`${dir}.dev.vars`);
    const first = readFileSync(`${dir}.dev.vars`, 'utf8');
    expect(first).toMatch(/^CURSOR_SECRET=[0-9a-f]{64}$/m);
    writeFileSync(`${dir}.dev.vars`, 'ADMIN_TOKEN=mine\n');
    expect(ensureDevVars(dir)).toBeUndefined();
    expect(readFileSync(`${dir}.dev.vars`, 'utf8')).toBe('ADMIN_TOKEN=mine\n');
  });
});
