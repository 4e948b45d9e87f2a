import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { planCreate, type NewRecord } from '../../src/domain/create.ts';
import { Meter } from '../../src/storage/meter.ts';
import { RecordWrites } from '../../src/storage/writes.ts';
import { admin, newUser, newWorkspace, fv } from './helpers.ts';

/** Every row a record's insert writes, with its own id written as `#` (so two inserts compare). */
async function rowsOf(id: number): Promise<string> {
  const [records, shared, changes, index, sort, terms] = await env.DB.batch([
    env.DB.prepare(
      `SELECT object_id, object_version, name, field_values, creation_type, version, deleted, owned_by, created_at,
         created_by, updated_at, updated_by, is_template, name_key, terms, folds FROM records WHERE id = ?`,
    ).bind(id),
    env.DB.prepare('SELECT workspace_id FROM record_workspaces WHERE record_id = ? ORDER BY 1').bind(id),
    env.DB.prepare('SELECT version, type, at, by, data FROM changes WHERE record_id = ?').bind(id),
    env.DB.prepare('SELECT field, object_id, value, unique_key FROM record_index WHERE record_id = ? ORDER BY 1').bind(
      id,
    ),
    env.DB.prepare('SELECT workspace_id, key, value FROM record_sort WHERE record_id = ? ORDER BY 1, 2, 3').bind(id),
    env.DB.prepare('SELECT workspace_id, term FROM name_terms WHERE record_id = ? ORDER BY 1, 2').bind(id),
  ]);
  return JSON.stringify([records, shared, changes, index, sort, terms].map((r) => r?.results)).replaceAll(
    new RegExp(`\\b${id}\\b`, 'g'),
    '#',
  );
}

describe('insertsPacked writes what inserts writes, in three statements per pack', () => {
  it('the same rows in every table for named, unnamed, folded, indexed, unique and template records', async () => {
    const editor = await newUser('editor');
    const one = await newWorkspace({ [editor.id]: 'editor' });
    const two = await newWorkspace({ [editor.id]: 'editor' });
    const fields = [
      { name: 'first', type: 'text' },
      { name: 'code', type: 'text', unique: true },
      { name: 'rank', type: 'integer', indexed: true },
    ];
    const named = (
      await admin('POST', '/admin/objects', {
        name: 'Straße',
        workspaceIds: [one, two],
        nameTemplate: '{first}',
        fields,
      })
    ).body;
    const unnamed = (await admin('POST', '/admin/objects', { name: 'Ünïcode Ω obj', workspaceIds: [one], fields }))
      .body;
    const caller = {
      userId: editor.id,
      roles: new Map([
        [one, 'editor' as const],
        [two, 'editor' as const],
      ]),
    };
    const items = (suffix: string) => [
      { objectId: named.id, fieldValues: [fv('first', 'Ada Lovelace'), fv('code', `ÉMILE-${suffix}`), fv('rank', 3)] },
      { objectId: named.id, fieldValues: [fv('first', 'ΣΟΦΊΑ straße'), fv('rank', 4)], isTemplate: true },
      { objectId: unnamed.id, fieldValues: [fv('code', `x-${suffix}`)] },
      { objectId: named.id, fieldValues: [] },
    ];
    const defs = new Map([
      [named.id, { ...named, workspaceIds: [one, two] }],
      [unnamed.id, { ...unnamed, workspaceIds: [one] }],
    ]);
    const plan = (suffix: string): NewRecord[] => {
      const planned = planCreate(caller, items(suffix), defs, 1_795_000_000_000);
      if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
      return planned.value.map((r) => ({ ...r, creationType: 'System' }));
    };
    const writes = new RecordWrites(env.DB, new Meter());
    // Ids far from every other number the rows hold, so each record's own id can be told apart.
    await env.DB.prepare(
      `INSERT INTO records (id, object_id, object_version, name, field_values, creation_type, version, created_at,
         created_by, updated_at, updated_by) VALUES (999999, ?, 1, 'filler', '[]', 'User', 1, 1, 1, 1, 1)`,
    )
      .bind(named.id)
      .run();
    const before =
      (await env.DB.prepare('SELECT coalesce(max(id), 0) AS id FROM records').first<{ id: number }>())?.id ?? 0;
    await env.DB.batch(writes.inserts(plan('a')));
    const packed = writes.insertsPacked(plan('a').map((r) => r));
    expect(packed).toHaveLength(3);
    // The unique values of the first set are held: the second set writes its own.
    await env.DB.batch(writes.insertsPacked(plan('b')));
    for (let k = 1; k <= 4; k++) {
      const single = await rowsOf(before + k);
      const many = await rowsOf(before + 4 + k);
      expect(many.replaceAll('-b', '-a').replaceAll('"b"', '"a"')).toBe(single);
    }
  });
});
