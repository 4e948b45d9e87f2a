import { PREFIX_TERM, WHOLE_NAME_TERM, WHOLE_WORD_TERM } from '../domain/record-keys.ts';

/**
 * How a search walks a workspace's name terms (`name_terms`, see domain/record-keys.ts): which
 * term each tier of relevance reads its candidates from, in id order. A candidate that holds the
 * term is then checked against every search word on its record; the plan picks the term that
 * the fewest records hold, so few candidates are read for nothing.
 *
 * - The whole name's tier reads `~<words>`: exactly its records.
 * - The whole words' tier reads `=<word>` of its rarest word.
 * - The prefixes' tier (and any walk of every match) reads, for a word of at most PREFIX_TERM
 *   letters, that word itself (a term of every name with a word that starts so); for a longer word,
 *   the range of whole words that start with it when few records hold one (read whole and ordered
 *   by id), else its first PREFIX_TERM letters.
 */

/** Records a term is counted up to when the plan compares words: the cost of choosing. */
export const PLAN_CAP = 100;
/** Words compared at most (the longest, which are mostly the rarest). */
const PLAN_WORDS = 3;
/** After every letter a word may hold. */
const LAST = '\u{10FFFF}';

/**
 * Where candidates come from: the records holding one term, or any term of a range, or (a query
 * that names `deleted`: deleted records hold no term) the workspace's records.
 */
export type TermDriver = { kind: 'term'; term: string } | { kind: 'range'; from: string; to: string };
export type Driver = TermDriver | { kind: 'workspace' };

export interface SearchPlan {
  /** The search's words, once each: each must start a word of the name. */
  distinct: string[];
  /** The driver of each tier (undefined: the tier is empty). */
  tiers: (Driver | undefined)[];
  /** The whole name's term (`~` and the search's words), when a name can be that long. */
  whole: string | undefined;
  /** A driver every match holds a term of. */
  all: Driver;
  /** True when `all` is held by fewer than PLAN_CAP records. */
  few: boolean;
  /** For each compared word, the records it can start a word of: its term, or its whole words' range. */
  narrowing: TermDriver[];
}

/** A counting statement: `?1` its JSON parameters, `?2` the workspace. */
export interface CountStatement {
  sql: string;
  params: string[];
}

/** A statement counting the records holding a driver's terms, up to `cap`. */
export const countOf = (driver: TermDriver, cap = PLAN_CAP): CountStatement =>
  driver.kind === 'term'
    ? {
        sql: `SELECT count(*) AS n FROM (SELECT 1 FROM name_terms WHERE workspace_id = ?2
          AND term = (?1 ->> '$[0]') LIMIT ${cap})`,
        params: [driver.term],
      }
    : {
        sql: `SELECT count(*) AS n FROM (SELECT 1 FROM name_terms WHERE workspace_id = ?2
          AND term >= (?1 ->> '$[0]') AND term < (?1 ->> '$[1]') LIMIT ${cap})`,
        params: [driver.from, driver.to],
      };

const letters = (word: string): string[] => [...word];
const term = (t: string): TermDriver => ({ kind: 'term', term: t });

/** The plan of a search of `words` (at least one); `count` runs counting statements in one round trip. */
export async function searchPlan(
  words: readonly string[],
  count: (statements: CountStatement[]) => Promise<number[]>,
): Promise<SearchPlan> {
  const whole = words.join(' ');
  const wholeName = letters(whole).length <= WHOLE_NAME_TERM ? term(`~${whole}`) : undefined;
  const compared = [...new Set(words)].sort((a, b) => letters(b).length - letters(a).length).slice(0, PLAN_WORDS);
  const short = (word: string): boolean => letters(word).length <= PREFIX_TERM;
  // A whole word's term keeps its first WHOLE_WORD_TERM letters: a longer search word reads those.
  const clip = (word: string): string => letters(word).slice(0, WHOLE_WORD_TERM).join('');
  const range = (word: string): TermDriver => ({ kind: 'range', from: `=${clip(word)}`, to: `=${clip(word)}${LAST}` });
  const head = (word: string): TermDriver => term(letters(word).slice(0, PREFIX_TERM).join(''));
  // Counted: each compared word's whole-word term (when several words compete for the tier), and
  // its prefix term or range of whole words.
  const several = compared.length > 1;
  const statements: CountStatement[] = [];
  const wholeAt = compared.map((word) => (several ? statements.push(countOf(term(`=${clip(word)}`))) - 1 : -1));
  const prefixAt = compared.map((word) =>
    several || !short(word) ? statements.push(countOf(short(word) ? term(word) : range(word))) - 1 : -1,
  );
  const counts = statements.length === 0 ? [] : await count(statements);
  const counted = (i: number): number => (i < 0 ? PLAN_CAP : (counts[i] ?? PLAN_CAP));

  let wholeWord = compared[0] as string;
  compared.forEach((word, i) => {
    if (counted(wholeAt[i] as number) < counted(wholeAt[compared.indexOf(wholeWord)] as number)) wholeWord = word;
  });
  // Each word's driver for every match, and how many records hold it (PLAN_CAP: many, or unknown).
  const options = compared.map((word, i) => {
    const n = counted(prefixAt[i] as number);
    if (short(word)) return { driver: term(word), n };
    return n < PLAN_CAP ? { driver: range(word), n } : { driver: head(word), n: PLAN_CAP };
  });
  const best = options.reduce((a, b) => (b.n < a.n ? b : a));
  return {
    distinct: [...new Set(words)],
    tiers: [wholeName, term(`=${clip(wholeWord)}`), best.driver],
    whole: wholeName?.kind === 'term' ? wholeName.term : undefined,
    all: best.driver,
    few: best.n < PLAN_CAP,
    narrowing: compared.map((word) => (short(word) ? term(word) : range(word))),
  };
}

/**
 * The plan of a search in a query that names `deleted`: deleted records hold no terms, so every
 * walk reads the workspace's records, each checked on its name.
 */
export function overWorkspace(plan: SearchPlan): SearchPlan {
  const workspace: Driver = { kind: 'workspace' };
  return { ...plan, tiers: plan.tiers.map(() => workspace), all: workspace, few: false, narrowing: [] };
}
