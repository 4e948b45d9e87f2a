import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TENANT } from '../../src/domain/tenant.ts';
import { Lists } from '../../src/storage/lists.ts';
import { Meter } from '../../src/storage/meter.ts';
import { MAX_PAGE_BYTES } from '../../src/storage/store.ts';
import { admin, call, createOne, newUser, newWorkspace, queryRecords, walkQuery, type Answer } from './helpers.ts';

/**
 * Pages of large records: a page reads whole no more records than its bytes can answer (their
 * sizes first), and a walk still sees every record once.
 */
const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const BODIES = Array.from({ length: 10 }, (_, i) => `body${i}`);
/** Records of about 900 KB each: four fit a page of 4 MiB. */
const RECORDS = 12;

describe('pages of records near 1 MiB', () => {
  it('lists, queries and the feed read whole only what a page answers, and walk every record once', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const fields = [...BODIES.map((name) => ({ name, type: 'text' })), { name: 'n', type: 'integer', indexed: true }];
    const object = (await admin('POST', '/admin/objects', { name: 'Big', workspaceIds: [workspaceId], fields })).body;
    const made: number[] = [];
    for (let i = 0; i < RECORDS; i++) {
      const values = [...BODIES.map((name) => fv(name, String.fromCharCode(97 + i).repeat(90_000))), fv('n', i)];
      made.push((await createOne(editor.key, object.id, values)).id as number);
    }
    const perPage = Math.floor(MAX_PAGE_BYTES / 900_000);

    // Storage answers no more records than fit, plus the one that crosses the bound.
    const stored = await new Lists(env.DB, new Meter(), DEFAULT_TENANT).records(
      'none',
      workspaceId,
      { deleted: 'exclude', fields: [] },
      0,
      100,
    );
    expect(stored.records.length).toBeLessThanOrEqual(perPage + 1);
    expect(stored.sizeCut).toBe(true);

    // The list: pages by cursor, each within the page's bytes, every record once.
    const listed: number[] = [];
    let cursor: string | null = null;
    do {
      const page: Answer = await call(
        'GET',
        `/workspaces/${workspaceId}/records?limit=100${cursor === null ? '' : `&cursor=${cursor}`}`,
        { key: editor.key },
      );
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(perPage);
      listed.push(...page.body.items.map((r: { id: number }) => r.id));
      cursor = page.body.nextCursor;
    } while (cursor !== null);
    expect(listed).toEqual(made);

    // Queries in every plan: by id, by a kept key, by an indexed field, by a sort SQL orders.
    for (const sort of [
      [{ field: 'id' }],
      [{ field: 'updatedAt', direction: 'desc' }],
      [{ field: 'n' }],
      [{ field: 'createdBy' }, { field: 'n', direction: 'desc' }],
    ]) {
      const first = await queryRecords(editor.key, workspaceId, { sort, limit: 100 });
      expect([sort, first.body.items.length <= perPage]).toEqual([sort, true]);
      const walked = await walkQuery(editor.key, workspaceId, { sort, limit: 100 });
      expect([sort, [...walked.ids].sort((a, b) => a - b)]).toEqual([sort, made]);
    }

    // The feed: every created record once, pages within their bytes.
    const fed: number[] = [];
    let after: string | undefined;
    for (;;) {
      const page: Answer = await call(
        'GET',
        `/workspaces/${workspaceId}/changes?limit=100${after === undefined ? '' : `&after=${after}`}`,
        { key: editor.key },
      );
      expect(page.status).toBe(200);
      if (page.body.items.length === 0) break;
      expect(page.body.items.length).toBeLessThanOrEqual(perPage);
      fed.push(...page.body.items.map((item: { recordId: number }) => item.recordId));
      after = page.body.nextCursor;
    }
    expect(fed).toEqual(made);
  }, 120_000);
});
