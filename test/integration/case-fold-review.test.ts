import { describe, expect, it } from 'vitest';
import { CASE_PAIRS, FOLD_LAYER } from '../../src/core/case-fold.ts';
import { MAX_CONDITIONS, MAX_FOLDED_LETTERS } from '../../src/domain/query.ts';
import { admin, createOne, newUser, newWorkspace, queryRecords } from './helpers.ts';

/**
 * Review of the Unicode case fold: the largest queries the bounds allow, in every plan.
 */

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

async function setup() {
  const editor = await newUser('editor');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const fields = [
    { name: 'note', type: 'text' },
    { name: 'rank', type: 'integer', indexed: true },
  ];
  const definition = { name: 'Item', nameTemplate: '{note}', workspaceIds: [workspaceId], fields };
  const object = (await admin('POST', '/admin/objects', definition)).body;
  return { editor, workspaceId, object };
}

describe('contains: many conditions that each fold in more than one step', () => {
  it('50 contains conditions holding 2,000 letters to fold: the match found in every plan, no 500', async () => {
    const { editor, workspaceId, object } = await setup();
    // Distinct lower-case letters (ǆ and ǉ, ǌ, ǳ, θ, ß… are the lower case of two letters).
    const lowers = [...new Set(CASE_PAIRS.map(([, lower]) => lower))];
    // Conditions of FOLD_LAYER + 1 letters each fold in two steps; the rest of the budget in one.
    const wide = Math.floor(MAX_FOLDED_LETTERS / (FOLD_LAYER + 1));
    const values = Array.from({ length: MAX_CONDITIONS }, (_, i) =>
      i < wide
        ? lowers.slice((i % 9) * (FOLD_LAYER - 1), (i % 9) * (FOLD_LAYER - 1) + FOLD_LAYER + 1).join('')
        : (lowers[i] as string),
    );
    expect(values.every((value, i) => [...value].length === (i < wide ? FOLD_LAYER + 1 : 1))).toBe(true);
    // The record holds each value sent in upper case.
    const upper = new Map(CASE_PAIRS.map(([u, l]) => [l, u]));
    const note = values.map((value) => [...value].map((c) => upper.get(c)).join('')).join(' ');
    const hit = await createOne(editor.key, object.id, [fv('note', note), fv('rank', 1)]);
    const miss = await createOne(editor.key, object.id, [fv('note', 'plain'), fv('rank', 1)]);
    const letters = values.reduce((n, value) => n + [...value].length, 0);
    expect(letters).toBeLessThanOrEqual(MAX_FOLDED_LETTERS);
    const filter = { and: values.map((value) => ({ field: 'note', op: 'contains', value })) };
    const plans: Record<string, unknown>[] = [
      {},
      { sort: [{ field: 'id', direction: 'desc' }] },
      {
        sort: [
          { field: 'rank', direction: 'asc' },
          { field: 'id', direction: 'asc' },
        ],
      },
      { sort: [{ field: 'createdAt', direction: 'desc' }] },
      {
        sort: [
          { field: 'rank', direction: 'desc' },
          { field: 'name', direction: 'asc' },
        ],
      },
      { search: 'plain' },
    ];
    for (const plan of plans) {
      const answer = await queryRecords(editor.key, workspaceId, { filter, count: true, ...plan });
      expect([JSON.stringify(plan), answer.status]).toEqual([JSON.stringify(plan), 200]);
      expect(answer.body.items.map((r: { id: number }) => r.id)).toEqual('search' in plan ? [] : [hit.id]);
      expect(answer.body.count.value).toBe('search' in plan ? 0 : 1);
    }
    // Negated, the other record matches.
    const negated = await queryRecords(editor.key, workspaceId, { filter: { not: filter } });
    expect(negated.status).toBe(200);
    expect(negated.body.items.map((r: { id: number }) => r.id)).toEqual([miss.id]);
  });
});
