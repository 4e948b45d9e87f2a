import * as v from 'valibot';
import { Id } from './common.ts';

/**
 * The aggregate body and answer as /openapi.json documents them. The body is checked by
 * domain/aggregate.ts, which knows the object's fields (this schema cannot): these only describe it.
 */

const GroupBy = v.strictObject({
  field: v.pipe(
    v.string(),
    v.description(
      'A select (a multiSelect: each option its own group), boolean, text, email, integer, reference (by id; ' +
        'several ids: each its own group), date or date-time field of the object, or createdAt, updatedAt, ' +
        'createdBy, ownedBy. A blank value is the group `null`.',
    ),
  ),
  interval: v.exactOptional(
    v.pipe(
      v.picklist(['day', 'week', 'month', 'quarter', 'year']),
      v.description(
        'For a date or date-time (required for a date-time, createdAt and updatedAt), in UTC: `2026-11-27`, the ' +
          "week's Monday `2026-11-23`, `2026-11`, `2026-Q4`, `2026`.",
      ),
    ),
  ),
});

const Measure = v.strictObject({
  op: v.picklist(['count', 'sum', 'avg', 'min', 'max']),
  field: v.exactOptional(
    v.pipe(
      v.string(),
      v.description('A number or integer field (a formula yielding one too); min and max also take dates.'),
    ),
  ),
});

export const AggregateBody = v.strictObject({
  objectId: v.pipe(Id, v.description('The object whose records of the workspace are aggregated.')),
  filter: v.exactOptional(v.pipe(v.unknown(), v.description('A filter as a query takes it.'))),
  groupBy: v.exactOptional(v.pipe(v.array(GroupBy), v.maxLength(2), v.description('0 to 2 groups.'))),
  measures: v.pipe(v.array(Measure), v.minLength(1), v.maxLength(10), v.description('1 to 10 measures.')),
  limit: v.exactOptional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000))),
  cursor: v.exactOptional(
    v.pipe(v.string(), v.description('The `nextCursor` of the previous page; valid only with the same body.')),
  ),
});

export const AggregatePage = v.strictObject({
  groups: v.array(
    v.strictObject({
      key: v.pipe(
        v.record(v.string(), v.unknown()),
        v.description('Each group field and its value (or interval) for this group.'),
      ),
      values: v.pipe(v.array(v.unknown()), v.description('Each measure, in the order asked; `null` over no value.')),
    }),
  ),
  exact: v.pipe(
    v.boolean(),
    v.description(
      'Whether every record of the object in the workspace was counted: always from kept totals, else when ' +
        'at most 20,000 records were read (fewer when a record falls in several groups).',
    ),
  ),
  nextCursor: v.nullable(v.string()),
});
