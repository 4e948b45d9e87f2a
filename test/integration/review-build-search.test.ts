import { createScheduledController } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import worker from './worker.ts';
import { searchKey } from '../../src/domain/query.ts';
import { canonicalJson } from '../../src/core/json.ts';
import { cursorKey, signPosition } from '../../src/http/cursor.ts';
import { storedCursorKey } from '../../src/storage/cursor-key.ts';
import { Meter } from '../../src/storage/meter.ts';
import { admin, createOne, newUser, newWorkspace, queryRecords, untilIndexBuilt, walkQuery } from './helpers.ts';

/** The test build's index builder (test/integration/worker.ts), held until released. */
interface Builder {
  hold(): Promise<void>;
  release(objectId: number): Promise<void>;
}
const builderOf = (objectId: number): Builder => env.INDEX_BUILDS.getByName(String(objectId)) as unknown as Builder;

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

/** The Cron Trigger, as the test build runs it (on the D1 with production's limits). */
async function runScheduled(): Promise<void> {
  const pending: Promise<unknown>[] = [];
  worker.scheduled(createScheduledController({ scheduledTime: Date.now() }), env, {
    waitUntil: (p: Promise<unknown>) => pending.push(p),
    passThroughOnException() {},
    props: {},
  } as unknown as ExecutionContext);
  await Promise.all(pending);
}

describe('index builds: a field whose stored values its new type cannot index', () => {
  it('sorts a text field turned datetime the same while it is built and after, each record once', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const definition = {
      name: 'Event',
      workspaceIds: [workspaceId],
      fields: [
        { name: 'when', type: 'text' },
        { name: 'tag', type: 'text' },
      ],
    };
    const object = (await admin('POST', '/admin/objects', definition)).body as { id: number };
    // Written as text: one value no date-time reading can make sense of, two that are date-times.
    const late = (await createOne(editor.key, object.id, [fv('when', '2026-03-01T00:00:00Z')])).id as number;
    const odd = (await createOne(editor.key, object.id, [fv('when', 'not a date')])).id as number;
    const early = (await createOne(editor.key, object.id, [fv('when', '2026-01-01T00:00:00Z')])).id as number;
    const none = (await createOne(editor.key, object.id, [fv('tag', 'x')])).id as number;
    const builder = builderOf(object.id);
    await builder.hold();
    const changed = await admin('PUT', `/admin/objects/${object.id}`, {
      ...definition,
      fields: [{ name: 'when', type: 'datetime', indexed: true }, definition.fields[1]],
    });
    expect(changed.status).toBe(200);
    // A value the type cannot order counts as no value: last either way, by id (as the stored values say).
    const expected = { asc: [early, late, odd, none], desc: [late, early, odd, none] };
    const expectSorted = async () => {
      for (const direction of ['asc', 'desc'] as const) {
        for (const limit of [1, 2, 100]) {
          const { ids } = await walkQuery(editor.key, workspaceId, { sort: [{ field: 'when', direction }], limit });
          expect(ids).toEqual(expected[direction]);
        }
      }
      const present = { filter: { field: 'when', op: 'exists', value: true } };
      expect((await walkQuery(editor.key, workspaceId, present)).ids).toEqual([late, early]);
    };
    // While the build is due, from the stored values; then from the index.
    await expectSorted();
    await builder.release(object.id);
    await untilIndexBuilt(object.id);
    await expectSorted();
  });
});

describe('search keys filled by the Cron Trigger', () => {
  it('fills the keys of long names whose folded words are longer than the names (within D1 limits)', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Scroll',
        workspaceIds: [workspaceId],
        nameTemplate: '{title}',
        fields: [{ name: 'title', type: 'text' }],
      })
    ).body as { id: number };
    // U+FDFA is one character whose compatibility form is 18: a 10,000-character name folds to a key
    // of 180,000 characters (two bytes each in UTF-8).
    const ids: number[] = [];
    for (let i = 0; i < 8; i++)
      ids.push((await createOne(editor.key, object.id, [fv('title', `${'\uFDFA'.repeat(9_998)} ${i}`)])).id as number);
    const plain = (await createOne(editor.key, object.id, [fv('title', 'Plain scroll')])).id as number;
    const keys = async () =>
      (
        await env.DB.prepare('SELECT id, name, name_key FROM records WHERE object_id = ? ORDER BY id')
          .bind(object.id)
          .all<{ id: number; name: string; name_key: string | null }>()
      ).results;
    // Each write keyed its own name.
    const unkeyed = async () => (await keys()).filter((r) => r.name_key !== searchKey(r.name)).map((r) => r.id);
    expect(await unkeyed()).toEqual([]);
    // As if written before names had keys.
    await env.DB.prepare('UPDATE records SET name_key = NULL WHERE object_id = ?').bind(object.id).run();
    await runScheduled();
    expect(await unkeyed()).toEqual([]);
    const found = await walkQuery(editor.key, workspaceId, { search: 'scroll' });
    expect(found.ids).toEqual([plain]);
    const last = await walkQuery(editor.key, workspaceId, { search: 'وسلم 7' });
    expect(last.ids).toEqual([ids[7]]);
  });
});

describe('a search walk begun before searches were answered by relevance', () => {
  it('goes on in id order from a cursor the id-ordered search issued, each match once, and ends', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Firm',
        workspaceIds: [workspaceId],
        nameTemplate: '{title}',
        fields: [{ name: 'title', type: 'text' }],
      })
    ).body as { id: number };
    const ids: number[] = [];
    for (const title of ['Acme One', 'Other', 'Acme', 'Big Acme', 'Acmeco'])
      ids.push((await createOne(editor.key, object.id, [fv('title', title)])).id as number);
    const [first, , exact, big, prefix] = ids as [number, number, number, number, number];
    // The cursor a search answered in id order issued after its first match: its position is `[id]`,
    // bound to the same body (filter, search, sort) as a search sent now.
    const body = { search: 'acme', limit: 1 };
    const secret = await cursorKey(env.CURSOR_SECRET, () => storedCursorKey(env.DB, new Meter()));
    const scope = `query/${workspaceId}/${canonicalJson({ filter: null, search: 'acme', sort: null })}`;
    let cursor: string | null = await signPosition(secret, [first], scope);
    const seen: number[] = [];
    for (let page = 0; page < 10 && cursor !== null; page++) {
      const answer = await queryRecords(editor.key, workspaceId, { ...body, cursor });
      expect(answer.status).toBe(200);
      seen.push(...answer.body.items.map((r: { id: number }) => r.id));
      cursor = answer.body.nextCursor as string | null;
    }
    expect(cursor).toBeNull();
    expect(seen).toEqual([exact, big, prefix]);
    // A walk begun now is by relevance.
    expect((await walkQuery(editor.key, workspaceId, body)).ids).toEqual([exact, first, big, prefix]);
  }, 60_000);
});
