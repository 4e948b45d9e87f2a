import * as v from 'valibot';
import { Id } from './common.ts';
import { maxChars } from './max-chars.ts';
import { BatchItemSchema, ReadRecordSchema, RecordSchema } from './record.ts';

/**
 * The query body as /openapi.json documents it. The body is checked by domain/query.ts, which
 * knows the field types (this schema cannot): these schemas only describe it.
 */

const OPS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'nin', 'contains', 'startsWith', 'exists'] as const;

const Condition = v.pipe(
  v.strictObject({
    field: v.pipe(
      v.string(),
      v.description(
        'A field of the objects in view, or a system field (id, objectId, name, createdAt, updatedAt, createdBy, ' +
          'updatedBy, ownedBy, deleted, isTemplate).',
      ),
    ),
    op: v.picklist(OPS),
    value: v.exactOptional(
      v.pipe(
        v.unknown(),
        v.description(
          "Of the field's type; an array of 1 to 100 for in/nin; true or false for exists; a non-empty string " +
            'for startsWith (case-sensitive) and for contains: on text and name a case-insensitive substring, ' +
            'letter for letter as unique text values compare (émi finds ÉMILE), on multiSelect an option; on a ' +
            'reference a record id.',
        ),
      ),
    ),
  }),
  v.description(
    'One condition; operators are typed by the field (ordering on number, integer, date, datetime, text; contains ' +
      'on text, multiSelect, name; startsWith on text, email, url, name). A reference takes eq, ne, in, nin and ' +
      'exists by id; one of several ids (`multiple`) also contains, and there eq, contains and in hold when it ' +
      'holds any id named, ne and nin when it holds none.',
  ),
);

const Group = v.union([
  v.strictObject({
    and: v.pipe(v.array(v.unknown()), v.minLength(1), v.description('Expressions that must all hold.')),
  }),
  v.strictObject({
    or: v.pipe(v.array(v.unknown()), v.minLength(1), v.description('Expressions one of which must hold.')),
  }),
  v.strictObject({ not: v.pipe(v.unknown(), v.description('An expression that must not hold.')) }),
]);

export const QueryBody = v.strictObject({
  filter: v.exactOptional(
    v.pipe(
      v.union([Condition, Group]),
      v.description(
        'A condition, or and/or/not of expressions: at most 10 levels and 50 conditions. Deleted records match only' +
          ' when the filter names `deleted`.',
      ),
    ),
  ),
  search: v.exactOptional(
    v.pipe(
      v.string(),
      maxChars(200),
      v.description(
        'Words matched against record names: each must start a word of the name (split at Unicode word ' +
          'boundaries; case folded fully, accents ignored). Without `sort`, results come by relevance (the whole ' +
          'name, then names holding every word whole, then the others), then id.',
      ),
    ),
  ),
  sort: v.exactOptional(
    v.pipe(
      v.array(v.strictObject({ field: v.string(), direction: v.exactOptional(v.picklist(['asc', 'desc'])) })),
      v.maxLength(3),
      v.description(
        "By id (the default), a system field or an indexed field; ties broken by id in the first key's " +
          'direction. Records without a value come last, either way.',
      ),
    ),
  ),
  fields: v.exactOptional(
    v.pipe(v.array(v.string()), v.description("Only these field values in each record's `fieldValues`.")),
  ),
  expand: v.exactOptional(
    v.pipe(
      v.array(v.string()),
      v.description(
        'Reference fields to expand: each record gains `expanded` with the records they reference (id, objectId, ' +
          'name, deleted) that the caller can read. A field that is not a reference in view: 400.',
      ),
    ),
  ),
  limit: v.exactOptional(v.pipe(Id, v.minValue(1), v.maxValue(100))),
  cursor: v.exactOptional(
    v.pipe(
      v.string(),
      v.description('The `nextCursor` of the previous page; valid only with the same filter, search and sort.'),
    ),
  ),
  count: v.exactOptional(
    v.pipe(
      v.boolean(),
      v.description(
        'Also count the matching records: exact when it read at most 20,000 candidates, and at any size ' +
          'for all of one object (a filter of only `objectId` `eq`) or of the workspace (no filter, no search) ' +
          'when the caller may read every record (the totals kept with each write).',
      ),
    ),
  ),
});

export const QueryPage = v.strictObject({
  items: v.array(ReadRecordSchema),
  nextCursor: v.nullable(v.string()),
  count: v.exactOptional(v.strictObject({ value: Id, exact: v.boolean() })),
});

/** POST /objects/{objectId}/records/upsert: each item's record and what was done to it, in request order. */
export const UpsertAnswer = v.array(
  v.strictObject({
    status: BatchItemSchema.entries.status,
    result: v.picklist(['created', 'updated', 'unchanged']),
    record: RecordSchema,
  }),
);
