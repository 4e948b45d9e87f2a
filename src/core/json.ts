import { pointer, type InputProblem } from './problem.ts';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * What JSON.parse lets through but the service could not store as sent: a number
 * no double holds (`1e400` parses to Infinity and would be stored as null) and a string or key
 * holding a lone surrogate (which storage would turn into U+FFFD). Iterative, so a deeply
 * nested body cannot exhaust the stack. At most `limit` problems.
 */
export function unstorableJson(value: unknown, limit = 20): InputProblem[] {
  const problems: InputProblem[] = [];
  const stack: [unknown, readonly (string | number)[]][] = [[value, []]];
  while (stack.length > 0 && problems.length < limit) {
    const [item, path] = stack.pop() as [unknown, (string | number)[]];
    if (typeof item === 'number' && !Number.isFinite(item)) {
      problems.push({ pointer: pointer('', ...path), code: 'invalid_number', message: 'number out of range' });
    } else if (typeof item === 'string' && LONE_SURROGATE.test(item)) {
      problems.push({
        pointer: pointer('', ...path),
        code: 'invalid_string',
        message: 'string holds a lone surrogate',
      });
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], [...path, i]]);
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, child] of Object.entries(item).reverse()) {
        if (LONE_SURROGATE.test(key)) {
          problems.push({
            pointer: pointer('', ...path, key),
            code: 'invalid_string',
            message: 'property name holds a lone surrogate',
          });
        } else stack.push([child, [...path, key]]);
      }
    }
  }
  return problems;
}

/** Levels of arrays and objects in a JSON value: 0 for a scalar, 1 for `[]`. Iterative. */
export function nesting(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (typeof item !== 'object' || item === null) continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** JSON text with object keys sorted: two bodies that parse to the same value give the same text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    typeof item === 'object' && item !== null && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}
