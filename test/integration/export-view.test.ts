import { beforeAll, describe, expect, it } from 'vitest';
import { admin, bulkRecords, download, newUser, newWorkspace, walkQuery } from './helpers.ts';

/**
 * An export of exactly the records in view: the `filter`, `sort` and `search` a query takes, as
 * query parameters, give the records that query walks, in its order, past a query's page; bad
 * ones are refused before a byte is sent.
 */

const N = 260;
let editor: { id: number; key: string };
let workspaceId: number;
let dealId: number;

// Stages cycle; amounts spread so a sort by amount is not the ids' order; names are "Deal <i>" or "Big deal <i>".
const VALUES = `json_array(
  json_object('fieldName', 'stage', 'value', CASE i % 3 WHEN 0 THEN 'lead' WHEN 1 THEN 'won' ELSE 'lost' END),
  json_object('fieldName', 'amount', 'value', (i * 7919) % 1000))`;

beforeAll(async () => {
  editor = await newUser('editor');
  workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const fields = [
    { name: 'stage', type: 'select', options: ['lead', 'won', 'lost'], indexed: true },
    { name: 'amount', type: 'integer', indexed: true },
  ];
  dealId = (await admin('POST', '/admin/objects', { name: 'Deal', workspaceIds: [workspaceId], fields })).body.id;
  const otherId = (await admin('POST', '/admin/objects', { name: 'Other', workspaceIds: [workspaceId], fields })).body
    .id;
  await bulkRecords(dealId, workspaceId, N, VALUES, `CASE WHEN i % 10 = 0 THEN 'Big deal ' ELSE 'Deal ' END || i`);
  await bulkRecords(otherId, workspaceId, 50, VALUES);
});

const exported = async (params: Record<string, unknown>, format = 'ndjson') => {
  const query = new URLSearchParams({ objectId: String(dealId), format });
  for (const [name, value] of Object.entries(params))
    query.set(name, typeof value === 'string' ? value : JSON.stringify(value));
  const res = await download(editor.key, `/workspaces/${workspaceId}/records/export?${query}`);
  return { status: res.status, text: await res.text() };
};
const idsOf = (text: string): number[] =>
  text
    .trimEnd()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { id: number }).id);

describe('an export of the records in view', () => {
  it('a filter and a sort: the records the query walks, in its order, past a page of 100', async () => {
    const filter = { field: 'stage', op: 'in', value: ['won', 'lost'] };
    for (const sort of [undefined, [{ field: 'amount', direction: 'desc' }], [{ field: 'name' }]]) {
      const body = {
        filter: { and: [{ field: 'objectId', op: 'eq', value: dealId }, filter] },
        ...(sort ? { sort } : {}),
      };
      const walked = await walkQuery(editor.key, workspaceId, { ...body, limit: 100 });
      expect(walked.ids.length).toBeGreaterThan(150);
      const answer = await exported({ filter, ...(sort ? { sort } : {}) });
      expect(answer.status).toBe(200);
      expect(idsOf(answer.text)).toEqual(walked.ids);
    }
  });

  it('a search, as CSV: the matching records by relevance, under the header', async () => {
    const walked = await walkQuery(editor.key, workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: dealId },
      search: 'big',
      limit: 100,
    });
    expect(walked.ids).toHaveLength(N / 10);
    const answer = await exported({ search: 'big' }, 'csv');
    const lines = answer.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe('id,name,version,updatedAt,stage,amount');
    expect(lines.slice(1).map((line) => Number(line.split(',')[0]))).toEqual(walked.ids);
    expect(lines.slice(1).every((line) => line.split(',')[1]?.startsWith('Big deal'))).toBe(true);
  });

  it('a sort whose walk meets only other objects for pages on end: it reads on past them, to the end', async () => {
    const own = await newUser('own');
    const space = await newWorkspace({ [own.id]: 'editor' });
    const objectIn = async (name: string) =>
      (await admin('POST', '/admin/objects', { name, workspaceIds: [space], fields: [] })).body.id as number;
    const notes = await objectIn('Note');
    const others = await objectIn('Noise');
    // Too many to be sorted as the object's candidates: the walk is by the workspace's names.
    await bulkRecords(notes, space, 1_100, 'json_array()', `'Note ' || i`);
    // Pages' walks (5,000 each) of nothing but these, one after another: by name, after every note.
    await bulkRecords(others, space, 30_000, 'json_array()', `'Zz ' || i`);
    const query = new URLSearchParams({ objectId: String(notes), sort: JSON.stringify([{ field: 'name' }]) });
    const res = await download(own.key, `/workspaces/${space}/records/export?${query}`);
    const names = (await res.text())
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { name: string }).name);
    expect(names).toEqual(Array.from({ length: 1_100 }, (_, i) => `Note ${i + 1}`).sort());
  });

  it('without a view, every live record in id order, as before', async () => {
    const answer = await exported({});
    const ids = idsOf(answer.text);
    expect(ids).toHaveLength(N);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it('a view that is not one: 400 naming its query parameter and pointer, nothing streamed', async () => {
    const cases: [Record<string, unknown> | string, unknown[]][] = [
      [{ filter: '{not json' }, [['filter', undefined, 'invalid_type']]],
      [{ filter: { field: 'nope', op: 'eq', value: 1 } }, [['filter', '/field', 'unknown_field']]],
      [{ sort: [{ field: 'amount', direction: 'up' }] }, [['sort', '/0/direction', 'invalid_value']]],
      [{ search: 'x'.repeat(201) }, [['search', undefined, expect.any(String)]]],
      // Read as strictly as a query's body: a member twice, a lone surrogate.
      ['filter={"field":"stage","op":"eq","value":"won","value":"lost"}', [['filter', '/value', 'duplicate']]],
      ['filter={"field":"stage","op":"eq","value":"\\ud800"}', [['filter', '/value', 'invalid_string']]],
    ];
    for (const [params, problems] of cases) {
      const answer =
        typeof params === 'string'
          ? await (async () => {
              const [name, value] = params.split(/=(.*)/s) as [string, string];
              const query = new URLSearchParams({ objectId: String(dealId), [name]: value });
              const res = await download(editor.key, `/workspaces/${workspaceId}/records/export?${query}`);
              return { status: res.status, text: await res.text() };
            })()
          : await exported(params);
      expect(answer.status).toBe(400);
      const body = JSON.parse(answer.text) as { errors: { query: string; pointer?: string; code: string }[] };
      expect(body.errors.map((p) => [p.query, p.pointer, p.code])).toEqual(problems);
    }
  });
});
