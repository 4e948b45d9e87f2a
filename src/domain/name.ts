import type { FieldValueOut } from '../schemas/record.ts';
import type { ObjectDef } from './object-def.ts';
import { characters } from '../core/characters.ts';

export const MAX_NAME = 10_000;
export const PLACEHOLDER = /\{([A-Za-z][A-Za-z0-9_]{0,99})\}/g;

/** White space and U+0000 at either end (SQLite's length() stops at U+0000: a leading one reads as empty). */
// eslint-disable-next-line no-control-regex -- U+0000 is the character to trim here.
const EDGES = /^[\s\u0000]+|[\s\u0000]+$/g;

/**
 * The name from the object's template, trimmed of white space and U+0000 and cut to
 * 10000 characters; undefined when there is no template or it renders empty, so the caller uses
 * `fallbackName`.
 */
export function renderTemplate(def: ObjectDef, values: readonly FieldValueOut[]): string | undefined {
  if (def.nameTemplate === undefined) return undefined;
  const byName = new Map(values.map((entry) => [entry.fieldName, entry.value]));
  const rendered = def.nameTemplate
    .replace(PLACEHOLDER, (_, field: string) => asText(byName.get(field)))
    .replace(EDGES, '');
  return rendered === '' ? undefined : cut(rendered);
}

/** `<object name> #<id>`. Creation computes it in SQL (the id is only known there): see storage. */
export function fallbackName(objectName: string, id: number): string {
  return `${objectName} #${id}`;
}

export function recordName(def: ObjectDef, values: readonly FieldValueOut[], id: number): string {
  return renderTemplate(def, values) ?? fallbackName(def.name, id);
}

function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(asText).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function cut(text: string): string {
  return characters(text) <= MAX_NAME ? text : Array.from(text).slice(0, MAX_NAME).join('');
}

/** Field names a template mentions, for checking definitions. */
export function templateFields(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '');
}
