import { characters } from '../core/characters.ts';
import { MAX_TEXT } from './field-types.ts';
import type { Compiled, Expr, ExprType, ResultType, Unit } from './formula-language.ts';

/**
 * A formula's value for one record: a walk of its typed tree. A blank input (missing, null, or not
 * of its field's type) makes most operations blank; a result no value can hold (a division by
 * zero, an overflow, a date past year 9999) is blank too. Nothing here throws.
 */

/** A value while a formula runs: a date or a datetime is epoch milliseconds (a date at 00:00 UTC). */
type Value = number | string | boolean | null;

interface Scope {
  values: ReadonlyMap<string, unknown>;
  /** The formulas computed so far for this record, read before `values`. */
  computed: ReadonlyMap<string, unknown> | null;
  record: { createdAt: number; updatedAt: number };
}

type Call = Extract<Expr, { kind: 'call' }>;

const FIRST = -62_135_596_800_000; // 0001-01-01T00:00:00.000Z
const LAST = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
const DAY = 86_400_000;
const MS: Record<Exclude<Unit, 'months' | 'years'>, number> = {
  days: DAY,
  weeks: 604_800_000,
  hours: 3_600_000,
  minutes: 60_000,
  seconds: 1000,
};

/** Every formula's value for one record, computed in compile order (each sees those before it); null when blank. */
export function computeFormulas(
  formulas: readonly Compiled[],
  values: ReadonlyMap<string, unknown>,
  record: { createdAt: number; updatedAt: number },
): Map<string, unknown> {
  const computed = new Map<string, unknown>();
  const scope: Scope = { values, computed, record };
  for (const formula of formulas) computed.set(formula.name, settle(formula, scope));
  return computed;
}

/** One formula's value for a record whose `values` hold the formulas it reads; null when blank. */
export function evaluate(
  formula: Compiled,
  values: ReadonlyMap<string, unknown>,
  record: { createdAt: number; updatedAt: number },
): unknown {
  return settle(formula, { values, computed: null, record });
}

function settle(formula: Compiled, scope: Scope): unknown {
  try {
    return output(run(formula.expr, scope), formula.resultType);
  } catch {
    // A value no rule foresaw leaves the formula blank rather than failing the record's write.
    return null;
  }
}

function run(expr: Expr, scope: Scope): Value {
  switch (expr.kind) {
    case 'value':
      return expr.value;
    case 'field':
      return read(expr, scope);
    case 'not': {
      const value = run(expr.arg, scope);
      return value === null ? null : !value;
    }
    case 'negate': {
      const value = run(expr.arg, scope);
      return value === null ? null : -(value as number);
    }
    case 'binary':
      return binary(expr, scope);
    case 'call':
      return call(expr, scope);
  }
}

function read(expr: Extract<Expr, { kind: 'field' }>, scope: Scope): Value {
  const { name, source, type } = expr;
  switch (source) {
    case 'createdAt':
    case 'updatedAt':
      return instant(scope.record[source]);
    case 'formula':
      return stored(scope.computed?.has(name) ? scope.computed.get(name) : scope.values.get(name), type);
    case 'value':
      return stored(scope.values.get(name), type);
  }
}

/** A stored value as a formula reads it: blank when it is not of the field's type. */
function stored(value: unknown, type: ExprType): Value {
  switch (type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? value : null;
    case 'text':
      return typeof value === 'string' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date':
      return typeof value === 'string' && value.length === 10 ? dateOf(value) : null;
    case 'datetime':
      return typeof value === 'string' ? instantOf(value) : null;
    case 'null':
      return null;
  }
}

function binary(expr: Extract<Expr, { kind: 'binary' }>, scope: Scope): Value {
  const { op, left, right } = expr;
  switch (op) {
    case 'AND':
      return run(left, scope) === true && run(right, scope) === true;
    case 'OR':
      return run(left, scope) === true || run(right, scope) === true;
    case '&': {
      // Joined texts are measured once, as the result: on the way only a length no text of
      // MAX_TEXT characters can have (two UTF-16 units each at most) gives up, costing nothing.
      const text = asText(run(left, scope), left.type) + asText(run(right, scope), right.type);
      return text.length <= 2 * MAX_TEXT ? text : null;
    }
  }
  const a = run(left, scope);
  if (a === null) return null;
  const b = run(right, scope);
  if (b === null) return null;
  switch (op) {
    case '=':
      return a === b;
    case '!=':
      return a !== b;
    case '<':
      return (a as number) < (b as number);
    case '<=':
      return (a as number) <= (b as number);
    case '>':
      return (a as number) > (b as number);
    case '>=':
      return (a as number) >= (b as number);
    case '+':
      return finite((a as number) + (b as number));
    case '-':
      return finite((a as number) - (b as number));
    case '*':
      return finite((a as number) * (b as number));
    case '/':
      return b === 0 ? null : finite((a as number) / (b as number));
    case '%':
      return b === 0 ? null : finite((a as number) % (b as number));
  }
}

function call(expr: Call, scope: Scope): Value {
  const { args } = expr;
  switch (expr.name) {
    case 'IF':
      return arg(expr, 0, scope) === true ? arg(expr, 1, scope) : arg(expr, 2, scope);
    case 'IFS':
      for (let i = 0; i + 1 < args.length; i += 2) if (arg(expr, i, scope) === true) return arg(expr, i + 1, scope);
      return null;
    case 'COALESCE':
      for (const each of args) {
        const value = run(each, scope);
        if (value !== null) return value;
      }
      return null;
    case 'ISBLANK':
      return arg(expr, 0, scope) === null;
    case 'MIN':
    case 'MAX':
      return extreme(expr, scope);
  }
  // Every other function is blank when an argument is.
  const first = arg(expr, 0, scope);
  if (first === null) return null;
  switch (expr.name) {
    case 'ROUND': {
      const digits = args.length > 1 ? arg(expr, 1, scope) : 0;
      return digits === null ? null : round(first as number, Math.trunc(digits as number));
    }
    case 'FLOOR':
      return Math.floor(first as number);
    case 'CEIL':
      return Math.ceil(first as number);
    case 'ABS':
      return Math.abs(first as number);
    case 'LEN':
      return characters(first as string);
    case 'LOWER':
      return (first as string).toLowerCase();
    case 'UPPER':
      return (first as string).toUpperCase();
    case 'TRIM':
      return (first as string).trim();
    case 'YEAR':
      return civil(Math.floor((first as number) / DAY)).year;
    case 'MONTH':
      return civil(Math.floor((first as number) / DAY)).month;
    case 'DAY':
      return civil(Math.floor((first as number) / DAY)).day;
  }
  const second = arg(expr, 1, scope);
  if (second === null) return null;
  switch (expr.name) {
    case 'LEFT':
      return leading(first as string, Math.trunc(second as number));
    case 'RIGHT':
      return trailing(first as string, Math.trunc(second as number));
    case 'CONTAINS':
      return (first as string).includes(second as string);
    case 'DATEADD':
      return expr.unit === null ? null : instant(shifted(first as number, Math.trunc(second as number), expr.unit));
    case 'DATEDIFF':
      return expr.unit === null ? null : difference(first as number, second as number, expr.unit);
  }
  return null;
}

const arg = (expr: Call, i: number, scope: Scope): Value => {
  const node = expr.args[i];
  return node === undefined ? null : run(node, scope);
};

const finite = (n: number): number | null => (Number.isFinite(n) ? n : null);

/** The least (MIN) or greatest (MAX) argument; blank when any is. */
function extreme(expr: Call, scope: Scope): Value {
  let best: number | null = null;
  for (const each of expr.args) {
    const value = run(each, scope) as number | null;
    if (value === null) return null;
    if (best === null || (expr.name === 'MAX' ? value > best : value < best)) best = value;
  }
  return best;
}

/** `n` rounded to `digits` decimals, half away from zero, in decimal notation: 1.005 rounds to 1.01. */
function round(n: number, digits: number): number | null {
  const places = Math.max(-400, Math.min(400, digits));
  const magnitude = Math.abs(n);
  if (places === 0) return Math.sign(n) * Math.round(magnitude);
  if (Math.abs(places) <= 22) {
    // Powers of ten to 10^22 are exact; the binary product is off only near a half, which the text settles.
    const power = 10 ** Math.abs(places);
    const scaled = places > 0 ? magnitude * power : magnitude / power;
    if (scaled < 2 ** 31 && Math.abs((scaled % 1) - 0.5) > 1e-6) {
      const whole = Math.round(scaled);
      return finite(Math.sign(n) * (places > 0 ? whole / power : whole * power));
    }
  }
  const scaled = shift(magnitude, places);
  // More decimals than a double holds: `n` is already exact.
  if (!Number.isFinite(scaled)) return n;
  return finite(Math.sign(n) * shift(Math.round(scaled), -places));
}

/** `n` times 10^`places`, moved in its decimal text so that no binary error creeps in. */
function shift(n: number, places: number): number {
  const [mantissa, exponent = '0'] = String(n).split('e');
  return Number(`${mantissa}e${Number(exponent) + places}`);
}

const isPairAt = (text: string, i: number): boolean => {
  const high = text.charCodeAt(i);
  const low = text.charCodeAt(i + 1);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
};

/** The first `count` characters of `text`, a surrogate pair counting as one. */
function leading(text: string, count: number): string {
  let i = 0;
  for (let taken = 0; taken < count && i < text.length; taken++) i += isPairAt(text, i) ? 2 : 1;
  return text.slice(0, i);
}

/** The last `count` characters of `text`, a surrogate pair counting as one. */
function trailing(text: string, count: number): string {
  let i = text.length;
  for (let taken = 0; taken < count && i > 0; taken++) i -= i >= 2 && isPairAt(text, i - 2) ? 2 : 1;
  return text.slice(i);
}

/** `ms` moved by whole `steps` of `unit`; a month step keeps the day, or the month's last when shorter. */
function shifted(ms: number, steps: number, unit: Unit): number {
  switch (unit) {
    case 'months':
      return addMonths(ms, steps);
    case 'years':
      return addMonths(ms, steps * 12);
    default:
      return ms + steps * MS[unit];
  }
}

function addMonths(ms: number, months: number): number {
  const days = Math.floor(ms / DAY);
  const { year, month, day } = civil(days);
  const total = year * 12 + month - 1 + months;
  if (!Number.isSafeInteger(total)) return NaN;
  const y = Math.floor(total / 12);
  const m = total - y * 12 + 1;
  return daysFrom(y, m, Math.min(day, daysIn(y, m))) * DAY + (ms - days * DAY);
}

/** `to` − `from` in whole units, cut toward zero; months and years count calendar months. */
function difference(from: number, to: number, unit: Unit): number {
  switch (unit) {
    case 'months':
      return to < from ? -months(to, from) : months(from, to);
    case 'years':
      return Math.trunc((to < from ? -months(to, from) : months(from, to)) / 12);
    default:
      return Math.trunc((to - from) / MS[unit]);
  }
}

/** Whole months from `from` to the later `to`: a month from Jan 31 is over on Feb 28 (or 29). */
function months(from: number, to: number): number {
  const a = civil(Math.floor(from / DAY));
  const b = civil(Math.floor(to / DAY));
  const count = (b.year - a.year) * 12 + b.month - a.month;
  return addMonths(from, count) > to ? count - 1 : count;
}

/** A value as `&` joins it: blank as empty text, a boolean as true or false, a date as written. */
function asText(value: Value, type: ExprType): string {
  if (value === null) return '';
  switch (type) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'date':
      return dateText(value as number) ?? '';
    case 'datetime':
      return instantText(value as number) ?? '';
    default:
      return String(value);
  }
}

const fits = (text: string): boolean => text.length <= MAX_TEXT || characters(text) <= MAX_TEXT;

/** A formula's value as a record holds it; -0 is 0. */
function output(value: Value, type: ResultType): unknown {
  if (value === null) return null;
  switch (type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? value + 0 : null;
    case 'text':
      return typeof value === 'string' && fits(value) ? value : null;
    case 'boolean':
      return value;
    case 'date':
      return dateText(value as number);
    case 'datetime':
      return instantText(value as number);
  }
}

/** A date as `YYYY-MM-DD`; blank outside years 0001 to 9999. */
function dateText(ms: number): string | null {
  if (instant(ms) === null) return null;
  const { year, month, day } = civil(Math.floor(ms / DAY));
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
}

/** A datetime as `toISOString` writes it, in UTC to the millisecond; blank outside years 0001 to 9999. */
function instantText(ms: number): string | null {
  const date = dateText(ms);
  if (date === null) return null;
  const time = ms - Math.floor(ms / DAY) * DAY;
  const hours = Math.floor(time / 3_600_000);
  const minutes = Math.floor(time / 60_000) % 60;
  const seconds = Math.floor(time / 1000) % 60;
  return `${date}T${pad(hours, 2)}:${pad(minutes, 2)}:${pad(seconds, 2)}.${pad(time % 1000, 3)}Z`;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** An instant, floored to the millisecond; blank outside years 0001 to 9999 or when not a number. */
const instant = (ms: unknown): number | null =>
  typeof ms === 'number' && ms >= FIRST && ms <= LAST ? Math.floor(ms) : null;

/** A `YYYY-MM-DD` date as the instant its day starts, UTC. */
function dateOf(text: string): number | null {
  const days = calendarDays(text);
  return days === null ? null : instant(days * DAY);
}

/**
 * A datetime that starts with a calendar date: as RFC 3339 writes it (how a record stores it),
 * read by hand; in any other shape, as Date reads it.
 */
function instantOf(text: string): number | null {
  const days = calendarDays(text);
  if (days === null) return null;
  const time = clock(text);
  return instant(time === null ? Date.parse(text) : days * DAY + time);
}

/** Milliseconds since 00:00 UTC of the date that `THH:MM:SS[.fraction](Z|±HH:MM)` after it writes; else null. */
function clock(text: string): number | null {
  const hours = digits(text, 11, 2);
  const minutes = digits(text, 14, 2);
  const seconds = digits(text, 17, 2);
  if ((text.charCodeAt(10) | 0x20) !== 0x74 || text.charCodeAt(13) !== 0x3a || text.charCodeAt(16) !== 0x3a)
    return null;
  if (hours < 0 || hours > 23 || minutes < 0 || minutes > 59 || seconds < 0 || seconds > 60) return null;
  let time = hours * 3_600_000 + minutes * 60_000 + seconds * 1000;
  let i = 19;
  if (text.charCodeAt(i) === 0x2e) {
    const start = ++i;
    while (digits(text, i, 1) >= 0) i++;
    const kept = Math.min(3, i - start);
    if (kept === 0) return null;
    time += digits(text, start, kept) * 10 ** (3 - kept);
  }
  const zone = text.charCodeAt(i);
  if ((zone | 0x20) === 0x7a) return i + 1 === text.length ? time : null;
  if ((zone !== 0x2b && zone !== 0x2d) || i + 6 !== text.length || text.charCodeAt(i + 3) !== 0x3a) return null;
  const offsetHours = digits(text, i + 1, 2);
  const offsetMinutes = digits(text, i + 4, 2);
  if (offsetHours < 0 || offsetHours > 23 || offsetMinutes < 0 || offsetMinutes > 59) return null;
  return time - (zone === 0x2b ? 1 : -1) * (offsetHours * 60 + offsetMinutes) * 60_000;
}

/** The number `count` decimal digits at `from` write, or -1 when a character there is no digit. */
function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (!(digit >= 0 && digit <= 9)) return -1;
    n = n * 10 + digit;
  }
  return n;
}

/** Days since 1970-01-01 of the valid calendar date `YYYY-MM-DD` that `text` starts with; else null. */
function calendarDays(text: string): number | null {
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  if (text.charCodeAt(4) !== 0x2d || text.charCodeAt(7) !== 0x2d || year < 0 || month < 1 || month > 12) return null;
  return day >= 1 && day <= daysIn(year, month) ? daysFrom(year, month, day) : null;
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (year: number): boolean => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
/** Days in `month` (1 to 12) of `year`. */
const daysIn = (year: number, month: number): number => (month === 2 && isLeap(year) ? 29 : (DAYS[month - 1] ?? NaN));

/** Days since 1970-01-01 of a proleptic Gregorian date, counted in whole 400-year eras of 146,097 days. */
function daysFrom(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  return (
    era * 146_097 + yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear - 719_468
  );
}

/** The calendar date `days` after 1970-01-01, the inverse of `daysFrom`. */
function civil(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shifted = Math.floor((5 * dayOfYear + 2) / 153);
  const month = shifted < 10 ? shifted + 3 : shifted - 9;
  return {
    year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0),
    month,
    day: dayOfYear - Math.floor((153 * shifted + 2) / 5) + 1,
  };
}
