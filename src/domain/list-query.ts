import type { InputProblem } from '../core/problem.ts';
import type { Result } from '../core/result.ts';
import { FIELD_NAME } from '../schemas/common.ts';

/** What `GET /workspaces/{id}/records` may filter on. */
export interface ListFilter {
  objectId?: number;
  deleted: 'exclude' | 'include' | 'only';
  updatedAfter?: number;
  /** `field.<name>=<value>`: the value's JSON text, or the string itself for a text value. */
  fields: { name: string; value: string }[];
}

export interface ListQuery {
  filter: ListFilter;
  limit: number;
  cursor?: string;
  /** Reference fields whose records each item shows in `expanded` (`expand=a,b`). */
  expand?: string[];
}

/** A page of one of the admin API's lists. */
export interface PageQuery {
  limit: number;
  cursor?: string;
}

export interface FeedQuery {
  limit: number;
  after?: string;
  /** Where a feed read without `after` starts: its oldest kept change, or after its newest (only what comes next). */
  start: 'oldest' | 'latest';
}

const INTEGER = /^[0-9]{1,16}$/;

function integer(raw: string, min: number, max: number): number | undefined {
  if (!INTEGER.test(raw)) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined;
}

const bad = (query: string, code: string, message: string): InputProblem => ({ query, code, message });

/** Every parameter once; an unknown or repeated parameter is a problem, like an unknown property. */
export function single(
  params: URLSearchParams,
  known: (name: string) => boolean,
): { values: Map<string, string>; problems: InputProblem[] } {
  const values = new Map<string, string>();
  const problems: InputProblem[] = [];
  for (const [name, value] of params) {
    if (!known(name)) problems.push(bad(name, 'unknown_parameter', 'unknown query parameter'));
    else if (values.has(name)) problems.push(bad(name, 'duplicate', 'parameter given more than once'));
    else values.set(name, value);
  }
  return { values, problems };
}

/** Parses the list's query string: every problem at once, each naming its parameter. */
export function parseListQuery(params: URLSearchParams): Result<ListQuery> {
  const { values, problems } = single(
    params,
    (name) =>
      ['limit', 'cursor', 'objectId', 'deleted', 'updatedAfter', 'expand'].includes(name) || name.startsWith('field.'),
  );
  let expand: string[] | undefined;
  const filter: ListFilter = { deleted: 'exclude', fields: [] };
  let limit = 50;
  let cursor: string | undefined;
  for (const [name, raw] of values) {
    if (name === 'limit') {
      const n = integer(raw, 1, 100);
      if (n === undefined) problems.push(bad(name, 'out_of_range', 'expected an integer from 1 to 100'));
      else limit = n;
    } else if (name === 'cursor') {
      cursor = raw;
    } else if (name === 'expand') {
      expand = raw.split(',');
    } else if (name === 'objectId' || name === 'updatedAfter') {
      const n = integer(raw, 0, Number.MAX_SAFE_INTEGER);
      if (n === undefined) problems.push(bad(name, 'invalid_type', 'expected a non-negative integer'));
      else filter[name] = n;
    } else if (name === 'deleted') {
      if (raw === 'exclude' || raw === 'include' || raw === 'only') filter.deleted = raw;
      else problems.push(bad(name, 'invalid_value', 'expected exclude, include or only'));
    } else {
      const field = name.slice('field.'.length);
      if (!FIELD_NAME.test(field)) problems.push(bad(name, 'invalid_format', 'expected field.<field name>'));
      else filter.fields.push({ name: field, value: raw });
    }
  }
  filter.fields.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: { filter, limit, ...(cursor === undefined ? {} : { cursor }), ...(expand === undefined ? {} : { expand }) },
  };
}

/** Parses the change feed's query string. */
export function parseFeedQuery(params: URLSearchParams): Result<FeedQuery> {
  const { values, problems } = single(params, (name) => ['after', 'limit', 'start'].includes(name));
  let limit = 100;
  const raw = values.get('limit');
  if (raw !== undefined) {
    const n = integer(raw, 1, 1000);
    if (n === undefined) problems.push(bad('limit', 'out_of_range', 'expected an integer from 1 to 1000'));
    else limit = n;
  }
  const after = values.get('after');
  const start = values.get('start') ?? 'oldest';
  if (start !== 'oldest' && start !== 'latest') {
    problems.push(bad('start', 'invalid_value', 'expected oldest or latest'));
    return { ok: false, problems };
  }
  if (values.has('start') && after !== undefined) {
    problems.push(bad('start', 'invalid_value', 'start and after cannot be given together'));
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: { limit, start, ...(after === undefined ? {} : { after }) } };
}

/** A live stream's query: where it starts, and the ticket that stands for a key where no header can be set. */
export interface LiveQuery {
  after?: string;
  /** Without `after`: only what comes next (the default), or every kept change first. */
  start: 'oldest' | 'latest';
  ticket?: string;
}

/** Parses the query of a workspace's live stream: `after` or `start` (default `latest`), and `ticket`. */
export function parseLiveQuery(params: URLSearchParams): Result<LiveQuery> {
  const { values, problems } = single(params, (name) => ['after', 'start', 'ticket'].includes(name));
  const after = values.get('after');
  const ticket = values.get('ticket');
  const start = values.get('start') ?? 'latest';
  if (start !== 'oldest' && start !== 'latest')
    problems.push(bad('start', 'invalid_value', 'expected oldest or latest'));
  else if (values.has('start') && after !== undefined)
    problems.push(bad('start', 'invalid_value', 'start and after cannot be given together'));
  if (problems.length > 0 || (start !== 'oldest' && start !== 'latest')) return { ok: false, problems };
  return {
    ok: true,
    value: { start, ...(after === undefined ? {} : { after }), ...(ticket === undefined ? {} : { ticket }) },
  };
}

/** Parses the query of an admin list: `limit` 1–100 (default 50) and `cursor`. */
export function parsePageQuery(params: URLSearchParams): Result<PageQuery> {
  const { values, problems } = single(params, (name) => name === 'limit' || name === 'cursor');
  let limit = 50;
  const raw = values.get('limit');
  if (raw !== undefined) {
    const n = integer(raw, 1, 100);
    if (n === undefined) problems.push(bad('limit', 'out_of_range', 'expected an integer from 1 to 100'));
    else limit = n;
  }
  if (problems.length > 0) return { ok: false, problems };
  const cursor = values.get('cursor');
  return { ok: true, value: { limit, ...(cursor === undefined ? {} : { cursor }) } };
}
