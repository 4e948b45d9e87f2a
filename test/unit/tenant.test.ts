import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { followingWriteId, newWriteId, writeIdTime } from '../../src/core/ledger.ts';
import {
  DEFAULT_TENANT,
  idRange,
  keyStart,
  MAX_TENANT,
  ownId,
  TENANT_BLOCK,
  tenantOfId,
  tenantOfKey,
} from '../../src/domain/tenant.ts';

/** What the database's departures trigger reads of a write id: its tenant (SQL's substr, 1-based). */
function tenantOfWriteId(id: string): number {
  if (id.slice(9, 11) !== '-t') return DEFAULT_TENANT;
  const rest = id.slice(11);
  return Number(rest.slice(0, rest.indexOf('-')));
}

describe('tenants as plain data', () => {
  it('gives each tenant a block of ids within JSON safe integers, the first one the default tenant’s', () => {
    expect(idRange(DEFAULT_TENANT)).toEqual({ lo: 0, hi: TENANT_BLOCK });
    expect(idRange(MAX_TENANT).hi).toBeLessThanOrEqual(Number.MAX_SAFE_INTEGER + 1);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_TENANT }), fc.integer({ min: 0, max: TENANT_BLOCK - 1 }), (t, n) => {
        const id = idRange(t).lo + n;
        expect(tenantOfId(id)).toBe(t);
        expect(ownId(t, id)).toBe(id);
        // Any other tenant names it as no id at all.
        expect(ownId(t === 1 ? 2 : t - 1, id)).toBe(-1);
      }),
    );
  });

  it('reads the tenant from a key: rk<tenant>_ for a tenant of its own, the default tenant for anything else', () => {
    expect(tenantOfKey('rk_abc')).toBe(DEFAULT_TENANT);
    expect(tenantOfKey('rk7_abc')).toBe(7);
    expect(keyStart(7)).toBe('rk7_');
    expect(keyStart(DEFAULT_TENANT)).toBe('rk_');
    for (const token of ['rk0_x', 'rk07_x', `rk${MAX_TENANT + 1}_x`, 'rk1234567890_x', 'xrk7_x', 'rk7x', 'admin'])
      expect(tenantOfKey(token), token).toBe(DEFAULT_TENANT);
    fc.assert(fc.property(fc.integer({ min: 1, max: MAX_TENANT }), (t) => tenantOfKey(`${keyStart(t)}xyz`) === t));
  });

  it('names a write’s tenant in its id as the database reads it; a following write keeps its time', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_TENANT }), fc.integer({ min: 1, max: MAX_TENANT }), (t, u) => {
        const id = newWriteId(t, 1_795_392_601_008);
        expect(id.startsWith(writeIdTime(1_795_392_601_008))).toBe(true);
        expect(tenantOfWriteId(id)).toBe(t);
        const following = followingWriteId(id, u, 'administrator');
        expect(tenantOfWriteId(following)).toBe(u);
        expect(following.slice(0, 9)).toBe(id.slice(0, 9));
        expect(following.endsWith('/administrator')).toBe(true);
        // The same id follows the same write: a retry finds it.
        expect(followingWriteId(id, u, 'administrator')).toBe(following);
        expect(followingWriteId(newWriteId(t), u, 'administrator')).not.toBe(following);
      }),
    );
  });
});
