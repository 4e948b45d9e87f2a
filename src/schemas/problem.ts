import * as v from 'valibot';

/** RFC 9457 problem details as CONTRACT §2 shapes them (documentation only: we never parse one). */
export const Problem = v.object({
  type: v.string(),
  title: v.string(),
  status: v.pipe(v.number(), v.integer()),
  code: v.string(),
  detail: v.exactOptional(v.string()),
  errors: v.exactOptional(
    v.array(
      v.object({
        pointer: v.exactOptional(v.string()),
        parameter: v.exactOptional(v.string()),
        code: v.string(),
        message: v.string(),
        status: v.exactOptional(v.pipe(v.number(), v.integer())),
      }),
    ),
  ),
});

export const Health = v.strictObject({ status: v.literal('ok') });
