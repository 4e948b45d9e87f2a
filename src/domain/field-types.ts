import { characters } from '../core/characters.ts';
import { nesting } from '../core/json.ts';
import { unhandled } from '../core/result.ts';
import type { FieldDef, FieldType } from './object-def.ts';

export const MAX_TEXT = 100_000;
/** Levels of arrays and objects a `json` value may hold; deeper is 422. */
export const MAX_NESTING = 64;
const MAX_URL = 8192;
const MAX_EMAIL = 254;

/** Why a value does not fit its field: `invalid_type` (wrong JSON type) or `invalid_value`. */
export interface ValueProblem {
  code: 'invalid_type' | 'invalid_value';
  message: string;
}

const wrongType = (expected: string): ValueProblem => ({ code: 'invalid_type', message: `expected ${expected}` });
const wrongValue = (message: string): ValueProblem => ({ code: 'invalid_value', message });

/**
 * The type of a field's values: a formula's is the type its expression yields; a rollup's a count
 * (an integer) or a number.
 */
export const valueType = (field: FieldDef): FieldType =>
  field.type === 'formula'
    ? (field.resultType ?? 'text')
    : field.type === 'rollup'
      ? field.op === 'count'
        ? 'integer'
        : 'number'
      : field.type;

/** Checks one non-null value against its field's type; undefined when it fits. */
export function checkValue(field: FieldDef, value: unknown): ValueProblem | undefined {
  switch (field.type) {
    case 'text':
      if (typeof value !== 'string') return wrongType('string');
      return characters(value) <= MAX_TEXT ? undefined : wrongValue(`expected at most ${MAX_TEXT} characters`);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : wrongType('number');
    case 'integer':
      return Number.isSafeInteger(value) ? undefined : wrongType('integer');
    case 'boolean':
      return typeof value === 'boolean' ? undefined : wrongType('boolean');
    case 'date':
      if (typeof value !== 'string') return wrongType('string');
      return isDate(value) ? undefined : wrongValue('expected a calendar date YYYY-MM-DD');
    case 'datetime':
      if (typeof value !== 'string') return wrongType('string');
      return isDateTime(value) ? undefined : wrongValue('expected an RFC 3339 date-time with offset');
    case 'select':
      if (typeof value !== 'string') return wrongType('string');
      return field.options?.includes(value) ? undefined : wrongValue('expected one of the options');
    case 'multiSelect':
      return checkMultiSelect(field.options ?? [], value);
    case 'email':
      if (typeof value !== 'string') return wrongType('string');
      return isEmail(value) ? undefined : wrongValue('expected an email address');
    case 'url':
      if (typeof value !== 'string') return wrongType('string');
      return isHttpUrl(value) ? undefined : wrongValue('expected an absolute http or https URL');
    case 'json':
      return nesting(value) <= MAX_NESTING
        ? undefined
        : wrongValue(`expected at most ${MAX_NESTING} levels of nesting`);
    case 'reference':
      return field.multiple === true
        ? checkReferences(value)
        : isRecordId(value)
          ? undefined
          : wrongType('a record id');
    case 'file':
      return checkFiles(value, field.multiple === true ? MAX_FILES : 1);
    case 'formula':
      return checkValue({ name: field.name, type: valueType(field) }, value);
    case 'lookup':
      return wrongValue('a lookup holds no value of its own');
    case 'rollup':
      return wrongValue('a rollup holds no value of its own');
    default:
      return unhandled(field.type, 'field type');
  }
}

function checkMultiSelect(options: readonly string[], value: unknown): ValueProblem | undefined {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) return wrongType('array of strings');
  if (!value.every((item) => options.includes(item))) return wrongValue('expected only strings of the options');
  return new Set(value).size === value.length ? undefined : wrongValue('expected distinct options');
}

/** The ids a `multiple` reference holds at most. */
export const MAX_REFERENCES = 100;

const isRecordId = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;

function checkReferences(value: unknown): ValueProblem | undefined {
  if (!Array.isArray(value) || !value.every(isRecordId)) return wrongType('array of record ids');
  if (value.length === 0 || value.length > MAX_REFERENCES)
    return wrongValue(`expected 1 to ${MAX_REFERENCES} record ids`);
  return new Set(value).size === value.length ? undefined : wrongValue('expected distinct record ids');
}

/** The files a `multiple` file field holds at most. */
export const MAX_FILES = 20;

const FILE_KEYS = ['id', 'name', 'size', 'contentType'];

/** A file as its upload answered it: `{id, name, size, contentType}`, nothing more. */
function isFile(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const file = value as Record<string, unknown>;
  const keys = Object.keys(file);
  return (
    keys.length === FILE_KEYS.length &&
    FILE_KEYS.every((key) => key in file) &&
    isRecordId(file.id) &&
    typeof file.name === 'string' &&
    Number.isSafeInteger(file.size) &&
    typeof file.contentType === 'string'
  );
}

function checkFiles(value: unknown, max: number): ValueProblem | undefined {
  if (!Array.isArray(value) || !value.every(isFile)) return wrongType('array of files {id, name, size, contentType}');
  if (value.length === 0 || value.length > max) return wrongValue(`expected 1 to ${max} files`);
  const ids = value.map((file: { id: number }) => file.id);
  return new Set(ids).size === ids.length ? undefined : wrongValue('expected distinct files');
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;

function isCalendarDate(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(2000, month - 1, day));
  date.setUTCFullYear(year);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

export function isDate(text: string): boolean {
  const m = DATE.exec(text);
  return m !== null && isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

export function isDateTime(text: string): boolean {
  const m = DATE_TIME.exec(text);
  if (m === null || !isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]))) return false;
  // RFC 3339 allows a leap second (60).
  const [hour, minute, second] = [Number(m[4]), Number(m[5]), Number(m[6])];
  if (hour > 23 || minute > 59 || second > 60) return false;
  return m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
}

const EMAIL = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)*$/u;

export function isEmail(text: string): boolean {
  return characters(text) <= MAX_EMAIL && EMAIL.test(text);
}

export function isHttpUrl(text: string): boolean {
  if (characters(text) > MAX_URL || !/^https?:\/\//i.test(text)) return false;
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
