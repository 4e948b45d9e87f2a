import { env } from 'cloudflare:workers';
import { RESERVED_FIELD_NAMES as RESERVED } from '../../src/domain/definition.ts';
import { describe, expect, it } from 'vitest';
import { admin, call, createOne, expectProblem, fv, newUser, newWorkspace, queryRecords } from './helpers.ts';

/**
 * A field may not be named like a property every record has (`id`, `name`, … in any case): it
 * would be shadowed by the property in queries and exports. A definition that already holds one
 * (written before the rule) keeps it.
 */

/** `name` in another case: every other letter upper case. */
const otherCase = (name: string): string =>
  [...name].map((c, i) => (i % 2 === 0 ? c.toUpperCase() : c.toLowerCase())).join('');

describe('field names that shadow a record property', () => {
  it('each is refused when an object is defined, in any case, at its pointer; nothing is created', async () => {
    const workspaceId = await newWorkspace();
    const names = [...RESERVED, ...RESERVED.map(otherCase), ...RESERVED.map((n) => n.toUpperCase())];
    const fields = [{ name: 'title', type: 'text' }, ...names.map((name) => ({ name, type: 'text' }))];
    const before = await env.DB.prepare('SELECT count(*) AS n FROM objects').first<{ n: number }>();
    const refused = await admin('POST', '/admin/objects', { name: 'Flight', workspaceIds: [workspaceId], fields });
    expectProblem(refused, 422, 'unprocessable');
    expect(refused.body.errors).toEqual(
      names.map((name, i) => ({
        pointer: `/fields/${i + 1}/name`,
        code: 'reserved_name',
        message: `${name} is a property of every record; choose another field name`,
      })),
    );
    expect(await env.DB.prepare('SELECT count(*) AS n FROM objects').first<{ n: number }>()).toEqual(before);
  });

  it('a replaced definition may not add one; one that holds one already keeps it', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const created = await admin('POST', '/admin/objects', {
      name: 'Flight',
      workspaceIds: [workspaceId],
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }],
    });
    const objectId = created.body.id as number;
    const put = (fields: unknown[]) =>
      admin('PUT', `/admin/objects/${objectId}`, { name: 'Flight', workspaceIds: [workspaceId], fields });
    const added = await put([
      { name: 'title', type: 'text' },
      { name: 'Version', type: 'integer' },
    ]);
    expectProblem(added, 422, 'unprocessable');
    expect(added.body.errors).toMatchObject([{ pointer: '/fields/1/name', code: 'reserved_name' }]);

    // A definition written before the rule, with a field `name`.
    await env.DB.prepare(
      `UPDATE object_versions SET fields = '[{"name":"title","type":"text"},{"name":"name","type":"text"}]'
       WHERE object_id = ?`,
    )
      .bind(objectId)
      .run();
    const record = await createOne(editor.key, objectId, [fv('title', 'Lisbon'), fv('name', 'LIS')]);
    const kept = await put([
      { name: 'title', type: 'text' },
      { name: 'name', type: 'text' },
      { name: 'gate', type: 'text' },
    ]);
    expect([kept.status, kept.body.fields.map((f: { name: string }) => f.name)]).toEqual([
      200,
      ['title', 'name', 'gate'],
    ]);
    // Kept by its exact name only: another case of it, or another reserved name, is refused.
    const renamed = await put([
      { name: 'title', type: 'text' },
      { name: 'NAME', type: 'text' },
    ]);
    expect(renamed.body.errors).toMatchObject([{ pointer: '/fields/1/name', code: 'reserved_name' }]);
    // Its records keep working; a query's `name` is the record's name, as for every record.
    const found = await queryRecords(editor.key, workspaceId, { filter: { field: 'name', op: 'eq', value: 'Lisbon' } });
    expect(found.body.items.map((r: { id: number }) => r.id)).toEqual([record.id]);
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('name', 'LIS2')] },
    });
    expect(patched.body.fieldValues).toEqual([fv('title', 'Lisbon'), fv('name', 'LIS2')]);
  });
});
