import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, createOne, newObject, newUser, newWorkspace } from './helpers.ts';

const FIELDS = 20;
const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

/** An editor, a workspace and an object with integer fields f0..f19. */
async function setup(records: number) {
  const editor = await newUser();
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const object = await newObject([workspaceId], {
    nameTemplate: undefined,
    fields: Array.from({ length: FIELDS }, (_, i) => ({ name: `f${i}`, type: 'integer' })),
  });
  const ids: number[] = [];
  for (let i = 0; i < records; i++) ids.push((await createOne(editor.key, object.id, [])).id);
  return { editor, workspaceId, ids };
}

const shuffled = <T>(list: readonly T[]): T[] =>
  list
    .map((item) => ({ item, key: Math.random() }))
    .sort((a, b) => a.key - b.key)
    .map(({ item }) => item);

async function storedRecord(id: number): Promise<{ version: number; values: Record<string, number> }> {
  const row = await env.DB.prepare('SELECT version, field_values FROM records WHERE id = ?')
    .bind(id)
    .first<{ version: number; field_values: string }>();
  const values = Object.fromEntries(
    (JSON.parse(row?.field_values ?? '[]') as { fieldName: string; value: number }[]).map((e) => [
      e.fieldName,
      e.value,
    ]),
  );
  return { version: row?.version ?? -1, values };
}

describe('no lost update, ever', () => {
  it(
    '150 concurrent single patches of one record: distinct consecutive versions, exact final version, ' +
      'every last value kept',
    async () => {
      const { editor, workspaceId, ids } = await setup(1);
      const id = ids[0] as number;
      const N = 150;
      const answers = await Promise.all(
        Array.from({ length: N }, (_, i) =>
          call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
            key: editor.key,
            body: { fieldValues: [fv(`f${i % FIELDS}`, i)] },
          }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(N).fill(200));
      const reported = answers.map((a) => a.body.version as number).sort((a, b) => a - b);
      expect(reported).toEqual(Array.from({ length: N }, (_, i) => i + 2));
      const final = await storedRecord(id);
      expect(final.version).toBe(N + 1);
      // Each field holds the value of the patch that was applied last among those that set it.
      for (let f = 0; f < FIELDS; f++) {
        const setters = answers
          .map((a, i) => ({ i, version: a.body.version as number }))
          .filter(({ i }) => i % FIELDS === f);
        const last = setters.reduce((a, b) => (b.version > a.version ? b : a));
        expect(final.values[`f${f}`]).toBe(last.i);
      }
      // Each answer shows the record right after that patch: its own value is in it.
      answers.forEach((a, i) => expect(a.body.fieldValues).toContainEqual(fv(`f${i % FIELDS}`, i)));
      expect((await call('GET', `/records/${id}`, { key: editor.key })).body.version).toBe(N + 1);
    },
  );

  it('12 concurrent batches over the same 20 records in any order: all at their first try, nothing lost', async () => {
    const { editor, ids } = await setup(20);
    const B = 12;
    const answers = await Promise.all(
      Array.from({ length: B }, (_, b) =>
        call('PATCH', '/records/batch', {
          key: editor.key,
          body: shuffled(ids).map((id) => ({ id, fieldValues: [fv(`f${b}`, b)] })),
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(B).fill(200));
    for (const id of ids) {
      const record = await storedRecord(id);
      expect(record.version).toBe(1 + B);
      for (let b = 0; b < B; b++) expect(record.values[`f${b}`]).toBe(b);
      // The versions answered for this record across batches are distinct and consecutive.
      const seen = answers
        .map((a) => (a.body as any[]).find((item) => item.record.id === id).record.version)
        .sort((x, y) => x - y);
      expect(seen).toEqual(Array.from({ length: B }, (_, i) => i + 2));
    }
    // They took turns: one read and one commit each, none lost a race and decided again.
    const roundTrips = answers.map((a) =>
      Number(/"(\d+) round trips?"/.exec(a.headers.get('Server-Timing') ?? '')?.[1]),
    );
    expect(roundTrips).toEqual(Array(B).fill(2));
    const changes = await env.DB.prepare(
      `SELECT count(*) AS n, count(DISTINCT record_id || ':' || version) AS distinct_versions FROM changes
        WHERE record_id IN (SELECT value FROM json_each(?1)) AND type = 'updated'`,
    )
      .bind(JSON.stringify(ids))
      .first<{ n: number; distinct_versions: number }>();
    expect(changes).toEqual({ n: 20 * B, distinct_versions: 20 * B });
  });

  it('singles and batches mixed on the same records: every change counted exactly once', async () => {
    const { editor, workspaceId, ids } = await setup(5);
    const work: Promise<{ status: number }>[] = [];
    let expected = 0;
    for (let round = 0; round < 8; round++) {
      work.push(
        call('PATCH', '/records/batch', {
          key: editor.key,
          body: shuffled(ids).map((id) => ({ id, fieldValues: [fv('f0', round)] })),
        }),
      );
      work.push(
        call('PATCH', `/workspaces/${workspaceId}/records/batch`, {
          key: editor.key,
          body: ids.map((id) => ({ id, fieldValues: [fv('f1', round)] })),
        }),
      );
      for (const id of ids)
        work.push(
          call('PATCH', `/workspaces/${workspaceId}/records/${id}`, {
            key: editor.key,
            body: { fieldValues: [fv('f2', round)] },
          }),
        );
      expected += 3;
    }
    const answers = await Promise.all(work);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    for (const id of ids) expect((await storedRecord(id)).version).toBe(1 + expected);
  });
});
