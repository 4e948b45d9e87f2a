import * as v from 'valibot';
import { PROBLEM_CODES } from '../http/errors.ts';

/** RFC 9457 problem details as the service answers them (documentation only: we never parse one). */
export const InputProblem = v.pipe(
  v.object({
    pointer: v.exactOptional(v.pipe(v.string(), v.description('RFC 6901 JSON Pointer into the request body.'))),
    parameter: v.exactOptional(v.pipe(v.string(), v.description('The path parameter at fault.'))),
    header: v.exactOptional(v.pipe(v.string(), v.description('The request header at fault.'))),
    query: v.exactOptional(v.pipe(v.string(), v.description('The query parameter at fault.'))),
    column: v.exactOptional(
      v.pipe(
        v.string(),
        v.description('An imported row: the column (CSV) or field at fault, beside the pointer into the row.'),
      ),
    ),
    value: v.exactOptional(
      v.pipe(
        v.string(),
        v.description('An imported row: the value at fault, as text (JSON unless a string), up to 200 characters.'),
      ),
    ),
    recordId: v.exactOptional(
      v.pipe(v.number(), v.integer(), v.description('A record the problem names: one that references the record.')),
    ),
    position: v.exactOptional(
      v.pipe(
        v.number(),
        v.integer(),
        v.description("A formula's expression: where in it the problem is, 0-based, counted in UTF-16 code units."),
      ),
    ),
    code: v.pipe(
      v.string(),
      v.description(
        'What is wrong: required, invalid_type, unknown_property, duplicate, unknown_field, ' +
          'invalid_value, not_editable, record_deleted, ...',
      ),
    ),
    message: v.string(),
    status: v.exactOptional(
      v.pipe(v.number(), v.integer(), v.description('Present when this problem alone would answer another status.')),
    ),
  }),
  v.description('One problem with one input.'),
);

export const Problem = v.pipe(
  v.object({
    type: v.string(),
    title: v.string(),
    status: v.pipe(v.number(), v.integer()),
    code: v.picklist(PROBLEM_CODES),
    detail: v.exactOptional(v.string()),
    errors: v.exactOptional(v.pipe(v.array(InputProblem), v.description('Every problem found, not only the first.'))),
  }),
  v.description('RFC 9457 problem details; `status` equals the HTTP status.'),
);

export const Health = v.strictObject({ status: v.literal('ok') });
