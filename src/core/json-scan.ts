import { unstorableJson } from './json.ts';
import { pointer, type InputProblem } from './problem.ts';

/** Levels of arrays and objects a request body may nest; deeper is refused before anything reads it. */
export const MAX_BODY_DEPTH = 100;

export type JsonScan = { ok: true; problems: InputProblem[] } | { ok: false };

type Frame = { array: true; index: number } | { array: false; key: string; keys: Set<string> };

const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const TWO_TO_53 = 2n ** 53n;
const HEX = /^[0-9a-fA-F]{4}$/;

/**
 * Reads JSON text without recursion and finds what JSON.parse lets through but an I-JSON
 * (RFC 7493) service must refuse: nesting deeper than `maxDepth` (scanning stops there), a member
 * name twice in one object, and a number a double cannot hold as written (beyond ±1.7e308, a
 * non-zero value that underflows to 0, an integer beyond ±2^53 written without fraction or
 * exponent). Each problem points at its place. `ok: false` when the text is not JSON at all.
 */
export function scanJson(text: string, maxDepth = MAX_BODY_DEPTH, limit = 20): JsonScan {
  const problems: InputProblem[] = [];
  const stack: Frame[] = [];
  const here = (...more: string[]): string => pointer('', ...stack.map((f) => (f.array ? f.index : f.key)), ...more);
  let i = 0;
  const skip = (): void => {
    for (let c = text.charCodeAt(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = text.charCodeAt(++i));
  };
  /** The end of the string literal starting at `i`, or -1 when it is malformed. */
  const stringEnd = (start: number): number => {
    for (let j = start + 1; j < text.length; j++) {
      const c = text.charCodeAt(j);
      if (c === 0x22) return j + 1;
      if (c < 0x20) return -1;
      if (c === 0x5c) {
        const e = text[j + 1];
        if (e === 'u') {
          if (!HEX.test(text.slice(j + 2, j + 6))) return -1;
          j += 5;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) j++;
        else return -1;
      }
    }
    return -1;
  };

  // A value is expected at `i`; after it, the enclosing frame says what may follow.
  for (;;) {
    skip();
    const c = text[i];
    if (c === '{' || c === '[') {
      if (stack.length >= maxDepth) {
        problems.push({ pointer: here(), code: 'too_deep', message: `nested deeper than ${maxDepth} levels` });
        return { ok: true, problems };
      }
      i++;
      skip();
      if (text[i] === (c === '[' ? ']' : '}')) {
        i++; // empty: nothing to enter
      } else if (c === '[') {
        stack.push({ array: true, index: 0 });
        continue;
      } else {
        stack.push({ array: false, key: '', keys: new Set() });
        if (!readKey()) return { ok: false };
        continue;
      }
    } else if (c === '"') {
      i = stringEnd(i);
      if (i < 0) return { ok: false };
    } else if (c === 't' || c === 'f' || c === 'n') {
      const word = c === 't' ? 'true' : c === 'f' ? 'false' : 'null';
      if (!text.startsWith(word, i)) return { ok: false };
      i += word.length;
    } else {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (m === null) return { ok: false };
      i = NUMBER.lastIndex;
      const problem = numberProblem(m[0], m[1] ?? '', m[2], m[3]);
      if (problem !== undefined && problems.length < limit)
        problems.push({ pointer: here(), code: 'invalid_number', message: problem });
    }
    // Close every frame the text closes, then move to the next value.
    for (;;) {
      skip();
      const top = stack.at(-1);
      if (top === undefined) {
        return i === text.length ? { ok: true, problems } : { ok: false };
      }
      const next = text[i++];
      if (next === ',') {
        if (top.array) top.index++;
        else if (!readKey()) return { ok: false };
        break;
      }
      if (next !== (top.array ? ']' : '}')) return { ok: false };
      stack.pop();
    }
  }

  /** Reads `"name":` into the object frame on top, noting a name it already holds. */
  function readKey(): boolean {
    skip();
    const top = stack.at(-1);
    if (top === undefined || top.array || text[i] !== '"') return false;
    const end = stringEnd(i);
    if (end < 0) return false;
    const key = JSON.parse(text.slice(i, end)) as string;
    i = end;
    top.key = key;
    if (top.keys.has(key)) {
      if (problems.length < limit)
        problems.push({
          pointer: here(),
          code: 'duplicate',
          message: 'member name appears more than once in this object',
        });
    } else top.keys.add(key);
    skip();
    return text[i++] === ':';
  }
}

/** Why a number literal cannot be held by a double as written, or undefined when it can. */
export function numberProblem(
  literal: string,
  integerDigits: string,
  fraction: string | undefined,
  exponent: string | undefined,
): string | undefined {
  const value = Number(literal);
  if (!Number.isFinite(value)) return 'number out of range';
  if (value === 0 && /[1-9]/.test(integerDigits + (fraction ?? ''))) return 'number underflows to 0';
  if (fraction === undefined && exponent === undefined && integerDigits.length >= 16) {
    const magnitude = BigInt(integerDigits);
    if (magnitude > TWO_TO_53) return 'integer beyond ±2^53 cannot be held exactly';
  }
  return undefined;
}

/** JSON text as the service takes it: its value, or every problem with it; `malformed` when it is not JSON at all. */
export type StrictJson =
  | { ok: true; value: unknown }
  | { ok: false; malformed: true }
  | { ok: false; malformed: false; problems: InputProblem[] };

/**
 * Parses JSON text as a request body is parsed: at most `maxDepth` levels (checked on the text,
 * before any code walks the value), I-JSON (no member twice, no number a double cannot hold as
 * written) and nothing storage could not keep as sent (a lone surrogate, a number out of range).
 * Every problem points at its place.
 */
export function parseStrictJson(text: string, maxDepth = MAX_BODY_DEPTH): StrictJson {
  const scan = scanJson(text, maxDepth);
  if (!scan.ok) return { ok: false, malformed: true };
  if (scan.problems.length > 0) return { ok: false, malformed: false, problems: scan.problems };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, malformed: true };
  }
  const problems = unstorableJson(value);
  return problems.length > 0 ? { ok: false, malformed: false, problems } : { ok: true, value };
}
