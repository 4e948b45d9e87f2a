import * as v from 'valibot';
import { pointer, type InputProblem } from '../core/problem.ts';
import type { Result } from '../core/result.ts';
import { MAX_BATCH } from './common.ts';

/** A parsed input: Valibot's output, or every problem found. */
export type Parsed<T> = Result<T>;

type Schema = v.GenericSchema;

export { pointer };

/** Valibot's output for `input`, or every problem it finds, in our vocabulary; messages never quote the input. */
export function validate<S extends Schema>(schema: S, input: unknown, prefix = ''): Result<v.InferOutput<S>> {
  const result = v.safeParse(schema, input);
  if (result.success) return { ok: true, value: result.output };
  return {
    ok: false,
    problems: result.issues.flatMap((issue) => [
      toProblem(issue, prefix),
      ...otherUnknownKeys(schema, issue).map((key) =>
        unknownProperty(pointer(prefix, ...keysOf(issue).slice(0, -1), key)),
      ),
    ]),
  };
}

const keysOf = (issue: v.BaseIssue<unknown>): (string | number)[] =>
  (issue.path ?? []).map((item) => item.key as string | number);

const unknownProperty = (at: string): InputProblem => ({
  pointer: at,
  code: 'unknown_property',
  message: 'unknown property',
});

/** A schema as Valibot builds it: what a path walks through. */
interface SchemaParts {
  type: string;
  entries?: Record<string, SchemaParts>;
  item?: SchemaParts;
  wrapped?: SchemaParts;
}

/**
 * An unknown key is reported by Valibot for the first such key of an object only: the object's
 * other keys that its schema does not name. The object's schema is found by the issue's path
 * (through objects, arrays and optional or nullable wrappers); none when the path leads elsewhere.
 */
function otherUnknownKeys(schema: Schema, issue: v.BaseIssue<unknown>): string[] {
  const last = issue.path?.at(-1);
  if (issue.expected !== 'never' || last === undefined || last.type !== 'object') return [];
  let at: SchemaParts | undefined = schema as unknown as SchemaParts;
  for (const key of keysOf(issue).slice(0, -1)) {
    while (at?.wrapped !== undefined) at = at.wrapped;
    at = typeof key === 'number' ? at?.item : at?.entries?.[key];
  }
  while (at?.wrapped !== undefined) at = at.wrapped;
  const entries = at?.type === 'strict_object' ? at.entries : undefined;
  if (entries === undefined) return [];
  return Object.keys(last.input as object).filter((key) => key !== last.key && !Object.hasOwn(entries, key));
}

/** Every problem Valibot finds, in our vocabulary; messages never quote the input. */
export function shapeProblems(schema: Schema, input: unknown, prefix = ''): InputProblem[] {
  const result = validate(schema, input, prefix);
  return result.ok ? [] : result.problems;
}

function toProblem(issue: v.BaseIssue<unknown>, prefix: string): InputProblem {
  const keys = (issue.path ?? []).map((item) => item.key as string | number);
  const at = pointer(prefix, ...keys);
  const last = keys.at(-1);
  if (issue.kind === 'schema' && issue.expected === 'never') return unknownProperty(at);
  if (issue.kind === 'schema' && issue.received === 'undefined' && issue.path?.at(-1)?.type === 'object') {
    return { pointer: at, code: 'required', message: `${String(last)} is required` };
  }
  const [code, message] = describe(issue);
  return { pointer: at, code, message };
}

function describe(issue: v.BaseIssue<unknown>): [string, string] {
  switch (issue.type) {
    case 'integer':
      return ['invalid_type', 'expected integer'];
    case 'min_value':
    case 'max_value':
      return ['out_of_range', `expected ${issue.expected}`];
    case 'min_length':
    case 'max_length':
      return ['invalid_length', `expected length ${issue.expected}`];
    case 'check':
      // The one check of the schemas is maxChars, whose message says the bound.
      return ['invalid_length', issue.message];
    case 'regex':
      return ['invalid_format', `expected to match ${issue.expected}`];
    default:
      return ['invalid_type', `expected ${issue.expected}`];
  }
}

/** Problems for a key whose value repeats within `list` (e.g. the same fieldName twice). */
export function duplicateProblems(list: unknown, key: string, prefix: string): InputProblem[] {
  if (!Array.isArray(list)) return [];
  const seen = new Set<unknown>();
  const problems: InputProblem[] = [];
  list.forEach((item: unknown, index) => {
    if (typeof item !== 'object' || item === null || !(key in item)) return;
    const value = (item as Record<string, unknown>)[key];
    if (typeof value !== 'string' && typeof value !== 'number') return;
    if (seen.has(value)) {
      problems.push({
        pointer: pointer(prefix, index, key),
        code: 'duplicate',
        message: `${key} appears more than once`,
      });
    }
    seen.add(value);
  });
  return problems;
}

/** Duplicated fieldName within the fieldValues list of an object at `prefix`. */
export function fieldValueDuplicates(item: unknown, prefix: string): InputProblem[] {
  if (typeof item !== 'object' || item === null) return [];
  return duplicateProblems(
    (item as { fieldValues?: unknown }).fieldValues,
    'fieldName',
    pointer(prefix, 'fieldValues'),
  );
}

/**
 * Parses a batch body. The length is checked first because Valibot skips array-level
 * actions when any item fails; then every item, and `extra` checks (duplicates) on the raw input.
 */
export function parseBatch<S extends Schema>(
  item: S,
  input: unknown,
  extra: (items: readonly unknown[]) => InputProblem[],
): Parsed<v.InferOutput<S>[]> {
  if (!Array.isArray(input)) {
    return { ok: false, problems: [{ pointer: '', code: 'invalid_type', message: 'expected an array' }] };
  }
  if (input.length < 1 || input.length > MAX_BATCH) {
    return {
      ok: false,
      problems: [{ pointer: '', code: 'invalid_length', message: `expected 1 to ${MAX_BATCH} elements` }],
    };
  }
  const items = input.map((element, index) => validate(item, element, pointer('', index)));
  const problems = [...items.flatMap((parsed) => (parsed.ok ? [] : parsed.problems)), ...extra(input)];
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: items.flatMap((parsed) => (parsed.ok ? [parsed.value] : [])) };
}

/**
 * Parses one object body; `extra` adds checks Valibot cannot express (duplicates). An array is
 * refused here because Valibot's object schemas take `[]` for an object without properties.
 */
export function parseObject<S extends Schema>(
  schema: S,
  input: unknown,
  extra: (input: unknown) => InputProblem[] = () => [],
): Parsed<v.InferOutput<S>> {
  if (Array.isArray(input))
    return { ok: false, problems: [{ pointer: '', code: 'invalid_type', message: 'expected an object' }] };
  const parsed = validate(schema, input);
  const problems = [...(parsed.ok ? [] : parsed.problems), ...extra(input)];
  return parsed.ok && problems.length === 0 ? parsed : { ok: false, problems };
}
