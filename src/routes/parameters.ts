import type { QueryParameter } from './operation.ts';

// Query parameters that operations of more than one group document alike.

/** A reference field's records beside each record read. */
export const EXPAND: QueryParameter = {
  name: 'expand',
  description:
    'Reference fields to expand, comma-separated (`expand=company,partners`): each record gains `expanded` with ' +
    'the records they reference that the caller can read (`id`, `objectId`, `name`, `deleted`), `null` for one it ' +
    'cannot. One more D1 read for the page. A field that is not a reference field: 400.',
  schema: { type: 'string' },
};

/** A keyset page of a list (the admin API's, and others): its size and where it starts. */
export const PAGE_QUERY: QueryParameter[] = [
  {
    name: 'limit',
    description: 'Items per page, 1 to 100 (default 50).',
    schema: { type: 'integer', minimum: 1, maximum: 100 },
  },
  {
    name: 'cursor',
    description: 'The `nextCursor` of the previous page, unchanged (an edited or foreign cursor is 400).',
    schema: { type: 'string' },
  },
];
