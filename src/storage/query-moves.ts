import type { Query } from '../domain/query.ts';
import { balanced, type Sql } from './query-sql.ts';

/** A position in a walk: the sort keys' values, then the id (a relevance walk: the tier, then the id). */
export type Position = (string | number | null)[];

/**
 * A walk by a key that writes move (a sort by update time, name or an indexed field; relevance)
 * keeps the feed's newest change number when it began as its positions' last value, `s:<seq>`.
 * Later pages pass over a record that a change since then moved (one that set its name, an indexed
 * value it is sorted by, or any change for the update time), so it is never seen twice; a record
 * whose place did not move is seen once.
 */
export const SINCE = 's:';

/** A walk's start and what moves a record in it: an SQL condition on a change `m`. */
export interface Since {
  seq: number;
  moves: (sql: Sql) => string;
}

/** What moves a record in the query's walk, or undefined when nothing does (id, creation time). */
export function movesOf(query: Query): ((sql: Sql) => string) | undefined {
  const keys = query.relevance ? ['name'] : query.sort.map((key) => key.field.name).filter((name) => name !== 'id');
  const fields = query.relevance ? [] : query.sort.filter((key) => key.field.kind === 'value');
  if (keys.some((name) => name === 'updatedAt' || name === 'updatedBy')) return () => '1';
  const named = keys.includes('name');
  if (!named && fields.length === 0) return undefined;
  return (sql) =>
    balanced(
      [
        ...(named ? [`m.data ->> '$.name' IS NOT NULL`] : []),
        ...fields.map(
          (key) => `EXISTS (SELECT 1 FROM json_each(m.data, '$.set') s
            WHERE s.value ->> '$.fieldName' = ${sql.param(key.field.name)})`,
        ),
      ],
      'OR',
    );
}

/** Changes of a record read to tell whether it moved; with more since the walk began, it did. */
const MOVES_READ = 10;

/**
 * The record `r` did not move since the walk began: its last change is older (one index read), or
 * none of its changes since moved it.
 */
export function unmoved(sql: Sql, since: Since): string {
  const seq = sql.param(since.seq);
  return `(coalesce((SELECT ch.seq FROM changes ch WHERE ch.record_id = r.id ORDER BY ch.version DESC LIMIT 1), 0)
      <= ${seq}
    OR NOT EXISTS (SELECT 1 FROM (SELECT ch.seq, ch.type, ch.data, row_number() OVER (ORDER BY ch.version DESC) AS n
        FROM changes ch WHERE ch.record_id = r.id ORDER BY ch.version DESC LIMIT ${MOVES_READ}) m
      WHERE m.seq > ${seq} AND (m.n = ${MOVES_READ} OR (m.type <> 'created' AND ${since.moves(sql)}))))`;
}

export function splitSince(after: Position | undefined): { at: Position | undefined; since: number | undefined } {
  const last = after?.at(-1);
  if (typeof last !== 'string' || !last.startsWith(SINCE)) return { at: after, since: undefined };
  const since = Number(last.slice(SINCE.length));
  return { at: after?.slice(0, -1), since: Number.isSafeInteger(since) ? since : undefined };
}
