import * as v from 'valibot';
import { maxChars } from './max-chars.ts';

/** Ids and counts: JSON integers only (no `1.5`, no `"1"`), >= 0, within the safe range. */
export const Id = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER));

/**
 * Field names of object definitions: a letter, then up to 99 letters, digits or `_`; a malformed
 * one is a shape problem.
 */
export const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]{0,99}$/;
export const FieldName = v.pipe(v.string(), v.regex(FIELD_NAME));

/**
 * A display name of an admin entity (user, workspace, object). Control characters are refused:
 * a label never needs them, and SQLite's length() stops at U+0000, so storage would refuse one.
 */
// eslint-disable-next-line no-control-regex -- refusing control characters is the point.
export const EntityName = v.pipe(v.string(), v.minLength(1), maxChars(200), v.regex(/^[^\u0000-\u001f]*$/));

export const MAX_BATCH = 20;
