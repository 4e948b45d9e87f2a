import { env } from 'cloudflare:test';

/**
 * Rollups counted by hand, for the tests that attack them: a rollup's definition from a short spec,
 * the live records of the referencing object straight from D1, and what each rollup should show.
 */

export type RollupOp = 'count' | 'sum' | 'avg' | 'min' | 'max';

/** A rollup over the reference field `field` (`account` unless named) of the referencing object. */
export interface RollupSpec {
  name: string;
  op: RollupOp;
  of?: string;
  field?: string;
}

/** The definition of `spec` on the referenced object, over the references of object `from`. */
export const rollupDef = (spec: RollupSpec, from: number) => ({
  name: spec.name,
  type: 'rollup',
  from: { objectId: from, field: spec.field ?? 'account' },
  op: spec.op,
  ...(spec.of === undefined ? {} : { of: spec.of }),
});

/** The live records of `objectId` with their values, read straight from D1. */
export async function liveValues(objectId: number, db: D1Database = env.DB): Promise<Record<string, unknown>[]> {
  const rows = await db
    .prepare('SELECT field_values FROM records WHERE object_id = ? AND deleted = 0')
    .bind(objectId)
    .all<{ field_values: string }>();
  return rows.results.map((r) =>
    Object.fromEntries(
      (JSON.parse(r.field_values) as { fieldName: string; value: unknown }[]).map((e) => [e.fieldName, e.value]),
    ),
  );
}

/** What the rollups of `specs` should show on record `target`, by hand (a record counts once). */
export function byHand(
  records: Record<string, unknown>[],
  target: number,
  specs: RollupSpec[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const spec of specs) {
    const refs = records.filter((r) => {
      const v = r[spec.field ?? 'account'];
      return Array.isArray(v) ? v.includes(target) : v === target;
    });
    if (spec.op === 'count') {
      out[spec.name] = refs.length;
      continue;
    }
    const nums = refs.map((r) => r[spec.of!]).filter((v): v is number => typeof v === 'number');
    const sum = nums.reduce((a, b) => a + b, 0);
    if (spec.op === 'sum') out[spec.name] = sum;
    else if (nums.length > 0)
      out[spec.name] =
        spec.op === 'avg' ? sum / nums.length : spec.op === 'min' ? Math.min(...nums) : Math.max(...nums);
  }
  return out;
}
