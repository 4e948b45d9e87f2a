import { extraRuns, foldCase, nameWords, searchWords, segmentWords } from '../core/fold.ts';

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
export const WHOLE_NAME_TERM = 200;
export const WHOLE_WORD_TERM = 201;
/**
 * Characters of folds of long values a record keeps at most: a row holds at most 2 MB, and a
 * record's values 1 MiB. The folds of values of at most SHORT_FOLD characters (unique values among
 * them, most of all) are always kept; longer values past this bound (text near the record's bound in
 * a script with case) compare by lower() alone, which folds ASCII.
 */
export const MAX_FOLD_CHARS = 400_000;
const SHORT_FOLD = 1000;

/** The key under which `folds` keeps the name's fold (field names start with a letter). */
export const NAME_FOLD = '#';

const codePoints = (word: string): string[] => [...word];

/**
 * The terms a name is found by: `~` and its whole name (its runs of letters and digits, as a
 * search splits its text: the best match is the name itself), `=` and each word (a whole word),
 * and each word's first 1 to PREFIX_TERM letters (a word that starts with a short search word).
 * Longer search words read the whole words' range.
 */
export function searchTerms(words: readonly string[], whole = words.join(' ')): string[] {
  const terms = new Set<string>();
  if (whole !== '' && codePoints(whole).length <= WHOLE_NAME_TERM) terms.add(`~${whole}`);
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
  const texts: [string, string][] = [[NAME_FOLD, name]];
  for (const { fieldName, value } of fieldValues) if (typeof value === 'string') texts.push([fieldName, value]);
  const folds: Record<string, string> = {};
  let long = 0;
  for (const [key, text] of texts) {
    const folded = foldCase(text);
    if (folded === sqlLower(text)) continue;
    if (text.length > SHORT_FOLD) {
      if (long + folded.length > MAX_FOLD_CHARS) continue;
      long += folded.length;
    }
    folds[key] = folded;
  }
  return JSON.stringify(folds);
}

/** Every key of a record with this name and these values. */
export function recordKeys(name: string, fieldValues: readonly { fieldName: string; value: unknown }[]): RecordKeys {
  const words = nameWords(name);
  const whole = searchWords(name).join(' ');
  return {
    nameKey: words.join(' '),
    terms: JSON.stringify(searchTerms(words, whole)),
    folds: foldsOf(name, fieldValues),
  };
}

/**
 * The keys of a record named `<objectName> #<id>`, whose id only SQL knows when it is inserted:
 * the parts that do not depend on the id. The id is one word of digits, which no fold changes;
 * storage puts it in its place: the name's key is its words (the object name's, then the id), then
 * the object name's runs that are not words; its terms add `=<id>`, its first letters and the whole
 * name (the object name's runs, then the id); its fold is the object name's, ` #` and the id.
 */
export interface FallbackKeys {
  /** The object name's words at word boundaries, joined by single spaces. */
  words: string;
  /** The object name's runs that are not among its words, each after a space ('' when none). */
  runs: string;
  /** The object name's runs joined by single spaces: the whole name's term before the id. */
  whole: string;
  /** The terms of the object name's words and runs (without the whole name's). */
  terms: string;
  /** The values' folds, as foldsOf() without the name's. */
  folds: string;
  /** The object name's fold when the name needs one, else null. */
  nameFold: string | null;
}

export function fallbackKeys(
  objectName: string,
  fieldValues: readonly { fieldName: string; value: unknown }[],
): FallbackKeys {
  const segments = segmentWords(objectName);
  const runs = extraRuns(segments, objectName);
  const folded = foldCase(objectName);
  return {
    words: segments.join(' '),
    runs: runs.map((run) => ` ${run}`).join(''),
    whole: searchWords(objectName).join(' '),
    terms: JSON.stringify(searchTerms([...segments, ...runs], '')),
    folds: foldsOf('', fieldValues),
    nameFold: folded === sqlLower(objectName) ? null : folded,
  };
}
