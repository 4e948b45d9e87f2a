import { ownId } from '../domain/tenant.ts';
import { invalidPath, notFound, type InputProblem } from './errors.ts';

const DIGITS = /^[0-9]+$/;

/**
 * Path ids: digits only (leading zeros allowed), else 400 naming every bad
 * parameter; digits beyond the safe integer range cannot name anything: 404.
 */
export function pathIds<K extends string>(params: Readonly<Record<string, string>>, ...names: K[]): Record<K, number> {
  const problems: InputProblem[] = [];
  const ids = {} as Record<K, number>;
  for (const name of names) {
    const raw = params[name] ?? '';
    if (!DIGITS.test(raw))
      problems.push({ parameter: name, code: 'invalid_format', message: `${name} must be digits only` });
    else ids[name] = Number(raw);
  }
  if (problems.length > 0) throw invalidPath(problems);
  if (names.some((name) => !Number.isSafeInteger(ids[name]))) throw notFound();
  return ids;
}

/**
 * Path ids as the request's tenant may name them: an id of another tenant's block becomes -1, which
 * names nothing, so the request reads and answers exactly what it does for an id that does not exist.
 */
export function tenantPathIds<K extends string>(
  params: Readonly<Record<string, string>>,
  tenant: number,
  ...names: K[]
): Record<K, number> {
  const ids = pathIds(params, ...names);
  for (const name of names) ids[name] = ownId(tenant, ids[name]);
  return ids;
}
