import type { InputProblem } from './problem.ts';

/**
 * The one result type: a value, or why there is none. By default the failure lists problems
 * (a parse, a plan, a query); a step whose failure is an error to rethrow later says so
 * (`Result<T, { error: unknown }>`).
 */
export type Result<T, Failure extends object = { problems: InputProblem[] }> =
  { ok: true; value: T } | ({ ok: false } & Failure);

/**
 * The default of a switch that handles every member of a union: a member added later makes the
 * switch fail to compile until it is handled there.
 */
export function unhandled(value: never, what: string): never {
  throw new Error(`unhandled ${what}: ${String(value)}`);
}
