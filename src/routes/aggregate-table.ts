import { aggregateRecords } from './aggregate.ts';
import { AggregateBody, AggregatePage } from '../schemas/aggregate.ts';
import type { Operation } from './operation.ts';

/** Summaries of one object's records in a workspace: groups and measures. */
export const aggregateOperations = {
  aggregateRecords: {
    method: 'POST',
    path: '/workspaces/:workspaceId/records/aggregate',
    handler: aggregateRecords,
    operationId: 'aggregateRecords',
    tag: 'Records',
    summary: "Summarize an object's records: counts, sums, averages, minimums and maximums by group",
    description:
      'Read-only; members (viewers too), else 404. The records of `objectId` in the workspace that the filter (as ' +
      'a query takes it) keeps and the caller may read, grouped by 0 to 2 fields and measured by 1 to 10 ' +
      'measures; a field hidden from the caller is as one the object lacks. Groups come in the order of their ' +
      'values, the blank group last, `limit` (1–1,000, 100 by default) a page, with a `nextCursor`. An aggregate ' +
      "of all of the object's records (no filter) by at most one indexed field (not unique, a multiSelect or " +
      'a date-time) that counts or adds up indexed numbers (`count`, `sum`, `avg`) reads the totals the ' +
      'workspace keeps per group, in the transaction of every write: exact at any size, a row a group (up to ' +
      '4,000 groups), when the caller may read every record. Any other reads at most 20,000 records of the ' +
      'object (fewer when a record falls in several groups, by the options of a multiSelect or the ids of a ' +
      'reference of several: about 90,000 rows in all): past them it covers those and says `exact: false`. ' +
      'Bad input ' +
      '(an unknown field, a sum of text, an interval on a field that holds no date, more than 2 groups or 10 ' +
      'measures) is 400, or 422 when every problem is one of meaning, each with its pointer.',
    auth: 'key',
    body: AggregateBody,
    ok: { status: 200, schema: AggregatePage },
    errors: [],
  },
} satisfies Record<string, Operation>;
