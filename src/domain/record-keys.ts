import { foldCase, nameWords, searchKey, searchWords } from '../core/fold.ts';

/**
 * The keys a record's row carries beside its values, computed here and nowhere else: every write
 * of a record stores them with it (`storage/writes.ts`), and triggers copy them to the per
 * workspace tables that searches and unique fields read. SQL compares them; it never folds.
 */
export interface RecordKeys {
  /** The name's search words joined by single spaces. */
  nameKey: string;
  /** The name's search terms, as a JSON array (see searchTerms). */
  terms: string;
  /** Folds of text values that SQLite's lower() would not fold alike, as a JSON object (see foldsOf). */
  folds: string;
}

/** A search term's first letters kept as terms of their own (a search word this short is looked up whole). */
export const PREFIX_TERM = 3;
/**
 * The longest whole name kept as a term, and the letters of a whole word kept in its term: a
 * search is at most 200 characters, so a longer word is never a search word, and its first 201
 * letters still sort it among the words that start with any search word.
 */
const WHOLE_NAME_TERM = 200;
const WHOLE_WORD_TERM = 201;
/**
 * Characters of folds a record keeps at most: a row holds at most 2 MB, and a record's values
 * 1 MiB. Values past it (rare: text near the record's bound in a script with case) compare by
 * lower() alone, which folds ASCII.
 */
export const MAX_FOLD_CHARS = 400_000;

/** The key under which `folds` keeps the name's fold (field names start with a letter). */
export const NAME_FOLD = '#';

const codePoints = (word: string): string[] => [...word];

/**
 * The terms a name is found by: `~` and its whole key (the best match: the name is the search),
 * `=` and each word (a whole word), and each word's first 1 to PREFIX_TERM letters (a word that
 * starts with a short search word). Longer search words read the whole words' range.
 */
export function searchTerms(words: readonly string[]): string[] {
  const terms = new Set<string>();
  const key = words.join(' ');
  if (key !== '' && codePoints(key).length <= WHOLE_NAME_TERM) terms.add(`~${key}`);
  for (const word of words) {
    const letters = codePoints(word);
    terms.add(`=${letters.slice(0, WHOLE_WORD_TERM).join('')}`);
    for (let n = 1; n <= Math.min(PREFIX_TERM, letters.length); n++) terms.add(letters.slice(0, n).join(''));
  }
  return [...terms];
}

/** SQLite's lower(): ASCII letters only. */
const sqlLower = (text: string): string => text.replace(/[A-Z]+/g, (s) => s.toLowerCase());

/**
 * The folds of a record's text values (and its name) where foldCase differs from SQLite's lower(),
 * by field name; the name's under NAME_FOLD. Empty for ASCII text.
 */
export function foldsOf(name: string, fieldValues: readonly { fieldName: string; value: unknown }[]): string {
  const folds: Record<string, string> = {};
  let chars = 0;
  const keep = (key: string, text: string): void => {
    const folded = foldCase(text);
    if (folded === sqlLower(text) || chars + folded.length > MAX_FOLD_CHARS) return;
    folds[key] = folded;
    chars += folded.length;
  };
  keep(NAME_FOLD, name);
  for (const { fieldName, value } of fieldValues) if (typeof value === 'string') keep(fieldName, value);
  return JSON.stringify(folds);
}

/** Every key of a record with this name and these values. */
export function recordKeys(name: string, fieldValues: readonly { fieldName: string; value: unknown }[]): RecordKeys {
  const words = nameWords(name);
  return { nameKey: words.join(' '), terms: JSON.stringify(searchTerms(words)), folds: foldsOf(name, fieldValues) };
}

/**
 * The keys of a record named `<objectName> #<id>`, whose id only SQL knows when it is inserted:
 * the parts that do not depend on the id. The id is one word of digits, which no fold changes;
 * storage adds its terms (`=<id>`, its first letters, the whole name) and its part of the name's
 * fold around the id.
 */
export interface FallbackKeys {
  /** The object name's words joined by single spaces (the name's key is this, a space and the id). */
  nameKey: string;
  /** The terms of the object name's words (without the whole name's). */
  terms: string;
  /** The values' folds, as foldsOf() without the name's. */
  folds: string;
  /** The object name's fold when the name needs one (the name's fold is this, ` #` and the id), else null. */
  nameFold: string | null;
}

export function fallbackKeys(
  objectName: string,
  fieldValues: readonly { fieldName: string; value: unknown }[],
): FallbackKeys {
  const words = nameWords(objectName);
  const folded = foldCase(objectName);
  return {
    nameKey: words.join(' '),
    terms: JSON.stringify(searchTerms(words).filter((term) => !term.startsWith('~'))),
    folds: foldsOf('', fieldValues),
    nameFold: folded === sqlLower(objectName) ? null : folded,
  };
}

export { searchKey, searchWords };
