import { queryRecords } from './query.ts';
import { QueryBody, QueryPage } from '../schemas/query.ts';
import type { Operation } from './operation.ts';

/** The query of a workspace's records: a filter, a sort, a count. */
export const queryOperations = {
  queryRecords: {
    method: 'POST',
    path: '/workspaces/:workspaceId/records/query',
    handler: queryRecords,
    operationId: 'queryRecords',
    tag: 'Records',
    summary: 'Find records of a workspace: filter, sort, count',
    description:
      'Read-only; members (viewers too), else 404. A typed filter tree over system and object fields (every problem' +
      ' listed with its pointer, 400), sort by id, system or indexed fields with keyset cursors bound to the ' +
      'filter, search and sort, a `fields` projection and an optional `count`. A search, a sort by `createdAt`, ' +
      "`updatedAt`, `name` or an indexed field, and an `eq` on an indexed field read the workspace's keys in the " +
      "page's order: every page but the last holds `limit` items, and its cost grows with the page, not the " +
      "workspace. A filter with an `eq` on `objectId` reads only that object's records of the workspace. Other " +
      'sorts are ordered over the workspace. A filter on unindexed fields alone reads at most ' +
      '5,000 candidates a page and may end early with a `nextCursor` (fewer or no items): keep following it until ' +
      'it is null. A `count` reads at most 20,000 candidates: it is exact when it read them all, else a lower bound ' +
      '(`exact: false`). So the rows a request reads are bounded whatever the shape of ' +
      'its filter. A walk by a key that writes move (a sort, relevance) passes over records a change moved after its ' +
      'first page: it shows each record at most once and every unchanged one exactly once. A search (every word ' +
      'starts a word of the name, case folded, accents ignored) filters like a condition; without a `sort` it is ' +
      'answered by relevance (the whole name, then names holding every word whole, then any other match), then id.',
    auth: 'key',
    body: QueryBody,
    ok: { status: 200, schema: QueryPage },
    errors: [],
  },
} satisfies Record<string, Operation>;
