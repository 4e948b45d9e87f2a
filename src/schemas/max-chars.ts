import * as v from 'valibot';
import { characters } from '../core/characters.ts';

/**
 * A string of at most `limit` Unicode code points. Valibot's maxLength counts UTF-16 units (an
 * emoji counts 2) while JSON Schema's maxLength counts code points: this counts as the document
 * says. /openapi.json shows it as `maxLength` (see `maxCharsAsJsonSchema`).
 */
export function maxChars(limit: number) {
  return Object.assign(
    v.check((text: string) => characters(text) <= limit, `expected length <=${limit}`),
    { maxChars: limit },
  );
}

/** For @valibot/to-json-schema's `overrideAction`: a maxChars check becomes `maxLength`. */
export function maxCharsAsJsonSchema({
  valibotAction,
  jsonSchema,
}: {
  valibotAction: unknown;
  jsonSchema: object;
}): object | undefined {
  const limit = (valibotAction as { maxChars?: unknown }).maxChars;
  return typeof limit === 'number' ? { ...jsonSchema, maxLength: limit } : undefined;
}
