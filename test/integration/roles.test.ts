import { describe, expect, it } from 'vitest';
import { admin, call, createOne, expectProblem, fv, newUser, newWorkspace, type Answer } from './helpers.ts';

/**
 * Roles a tenant's administrator defines: per object, rights, own rows, hidden and read-only
 * fields; what each path shows a member holding one.
 */

const DEAL_FIELDS = [
  { name: 'title', type: 'text', required: true },
  { name: 'salary', type: 'integer', indexed: true },
  { name: 'stage', type: 'select', options: ['lead', 'won'] },
  { name: 'note', type: 'text' },
];

async function roleWorld() {
  const owner = await newUser('owner');
  const member = await newUser('member');
  const workspaceId = await newWorkspace({ [owner.id]: 'editor' });
  const deal = (
    await admin('POST', '/admin/objects', {
      name: 'Deal',
      workspaceIds: [workspaceId],
      nameTemplate: '{title}',
      fields: DEAL_FIELDS,
    })
  ).body;
  const secret = (
    await admin('POST', '/admin/objects', {
      name: 'Secret',
      workspaceIds: [workspaceId],
      fields: [{ name: 'code', type: 'text' }],
    })
  ).body;
  const role = await admin('POST', '/admin/roles', {
    name: `sales ${Math.random()}`,
    objects: [
      {
        objectId: deal.id,
        read: true,
        create: true,
        update: true,
        rows: 'own',
        fields: { salary: 'hidden', stage: 'read' },
      },
    ],
  });
  expect([role.status, role.body]).toEqual([201, expect.anything()]);
  const put = await admin('PUT', `/admin/workspaces/${workspaceId}/members/${member.id}`, { roleId: role.body.id });
  expect(put.body).toEqual({ workspaceId, userId: member.id, roleId: role.body.id });
  const ownersDeal = await createOne(owner.key, deal.id, [fv('title', 'Big'), fv('salary', 900), fv('stage', 'lead')]);
  const secretRecord = await createOne(owner.key, secret.id, [fv('code', 'x')]);
  const mine = await call('POST', '/records/batch', {
    key: member.key,
    body: [{ objectId: deal.id, fieldValues: [fv('title', 'Mine'), fv('note', 'n')] }],
  });
  expect(mine.status).toBe(201);
  return {
    owner,
    member,
    workspaceId,
    deal,
    secret,
    role: role.body,
    ownersDeal,
    secretRecord,
    mine: mine.body[0].record,
  };
}

/** Two answers alike in status and body, once the name or id each was asked about is set aside. */
const same = (a: Answer, b: Answer, names: [string, string] = ['salary', 'nothing']) => {
  const text = (answer: Answer, name: string) =>
    JSON.stringify({ status: answer.status, body: answer.body }).replaceAll(name, '<name>');
  expect(text(a, names[0])).toEqual(text(b, names[1]));
};

describe('defining roles', () => {
  it('writes the rules out whole, lists, reads, replaces and deletes them', async () => {
    const workspaceId = await newWorkspace();
    const object = (
      await admin('POST', '/admin/objects', { name: 'O', workspaceIds: [workspaceId], fields: DEAL_FIELDS })
    ).body;
    const created = await admin('POST', '/admin/roles', {
      name: 'reader',
      objects: [{ objectId: object.id, read: true }],
    });
    expect(created.status).toBe(201);
    const whole = {
      id: created.body.id,
      name: 'reader',
      objects: [
        { objectId: object.id, read: true, create: false, update: false, delete: false, rows: 'all', fields: {} },
      ],
    };
    expect(created.body).toEqual(whole);
    expect((await admin('GET', `/admin/roles/${created.body.id}`)).body).toEqual(whole);
    expect((await admin('GET', '/admin/roles')).body.items).toContainEqual(whole);
    const replaced = await admin('PUT', `/admin/roles/${created.body.id}`, {
      name: 'reader2',
      objects: [{ objectId: object.id, read: true, fields: { note: 'read' } }],
    });
    expect(replaced.body.objects[0].fields).toEqual({ note: 'read' });
    expect((await admin('GET', `/admin/roles/${created.body.id}`)).body.name).toBe('reader2');
    const user = await newUser();
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${user.id}`, { roleId: created.body.id });
    const inUse = await admin('DELETE', `/admin/roles/${created.body.id}`);
    expectProblem(inUse, 409, 'conflict');
    expect((await admin('GET', `/admin/roles/${created.body.id}`)).status).toBe(200);
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${user.id}`, { role: 'viewer' });
    expect((await admin('DELETE', `/admin/roles/${created.body.id}`)).status).toBe(204);
    expectProblem(await admin('GET', `/admin/roles/${created.body.id}`), 404, 'not_found');
  });

  it('refuses bad roles with every problem listed, and writes nothing', async () => {
    const workspaceId = await newWorkspace();
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'O',
        workspaceIds: [workspaceId],
        nameTemplate: '{title}',
        fields: DEAL_FIELDS,
      })
    ).body;
    await admin('POST', '/admin/roles', { name: 'taken', objects: [] });
    const before = (await admin('GET', '/admin/roles')).body.items.length;
    const bad = await admin('POST', '/admin/roles', {
      name: 'x',
      objects: [
        { objectId: 987654, read: true },
        { objectId: object.id, read: true, fields: { nothing: 'hidden', title: 'hidden' } },
        { objectId: object.id, read: true },
        { objectId: object.id, update: true },
      ],
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code])).toEqual([
      ['/objects/0/objectId', 'unknown_object'],
      ['/objects/1/fields/nothing', 'unknown_field'],
      ['/objects/1/fields/title', 'name_template_field'],
      ['/objects/2/objectId', 'duplicate'],
      ['/objects/3/objectId', 'duplicate'],
      ['/objects/3/update', 'needs_read'],
    ]);
    const taken = await admin('POST', '/admin/roles', { name: 'taken', objects: [] });
    expect([taken.status, taken.body.errors]).toEqual([
      422,
      [{ pointer: '/name', code: 'name_taken', message: 'the tenant has a role of this name' }],
    ]);
    expectProblem(
      await admin('POST', '/admin/roles', { name: 'y', objects: [{ objectId: 1, fields: { a: 'x' } }] }),
      400,
      'invalid_request',
    );
    expect((await admin('GET', '/admin/roles')).body.items.length).toBe(before);

    const user = await newUser();
    const both = await admin('PUT', `/admin/workspaces/${workspaceId}/members/${user.id}`, {
      role: 'viewer',
      roleId: 1,
    });
    expectProblem(both, 400, 'invalid_request');
    const unknown = await admin('PUT', `/admin/workspaces/${workspaceId}/members/${user.id}`, { roleId: 987654 });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors).toEqual([{ pointer: '/roleId', code: 'unknown_role', message: 'no such role' }]);
    expect((await admin('GET', `/admin/workspaces/${workspaceId}/members`)).body.items).toEqual([]);
  });
});

describe('a member under a role', () => {
  it('sees only the records and fields the role shows, on every read', async () => {
    const w = await roleWorld();
    const { member, workspaceId, mine } = w;
    expect(mine.fieldValues).toEqual([fv('title', 'Mine'), fv('note', 'n')]);
    // Another's record of an own-rows object and a record of an unlisted object: as missing ids.
    const missing = await call('GET', '/records/987654321', { key: member.key });
    for (const id of [w.ownersDeal.id, w.secretRecord.id]) {
      same(await call('GET', `/records/${id}`, { key: member.key }), missing);
      same(
        await call('GET', `/records/${id}/history`, { key: member.key }),
        await call('GET', '/records/987654321/history', { key: member.key }),
      );
    }
    // The owner's view of the member's record has the stage; the member's has no salary.
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${mine.id}`, {
      key: w.owner.key,
      body: { fieldValues: [fv('salary', 5), fv('stage', 'won')] },
    });
    expect(patched.status).toBe(200);
    const read = await call('GET', `/records/${mine.id}`, { key: member.key });
    const whole = (await call('GET', `/records/${mine.id}`, { key: w.owner.key })).body;
    expect(whole.fieldValues).toContainEqual(fv('salary', 5));
    expect(read.body).toEqual({
      ...whole,
      fieldValues: whole.fieldValues.filter((v: { fieldName: string }) => v.fieldName !== 'salary'),
    });
    const list = await call('GET', `/workspaces/${workspaceId}/records`, { key: member.key });
    expect(list.body.items.map((r: { id: number }) => r.id)).toEqual([mine.id]);
    expect(list.body.items[0].fieldValues).toEqual(read.body.fieldValues);
    const query = await call('POST', `/workspaces/${workspaceId}/records/query`, {
      key: member.key,
      body: { count: true },
    });
    expect(query.body.items).toEqual([read.body]);
    expect(query.body.count).toMatchObject({ value: 1 });
    const objects = await call('GET', `/workspaces/${workspaceId}/objects`, { key: member.key });
    expect(objects.body.items.map((o: { name: string }) => o.name)).toEqual(['Deal']);
    expect(objects.body.items[0].fields.map((f: { name: string }) => f.name)).toEqual(['title', 'stage', 'note']);
    const feed = await call('GET', `/workspaces/${workspaceId}/changes`, { key: member.key });
    expect(feed.body.items.map((c: { recordId: number }) => c.recordId)).toEqual([mine.id, mine.id]);
    expect(JSON.stringify(feed.body)).not.toContain('salary');
    const history = await call('GET', `/records/${mine.id}/history`, { key: member.key });
    expect(history.body.items[0].changes).toEqual([{ fieldName: 'stage', from: null, to: 'won' }]);
  });

  it('exports only what the role shows, and an unlisted object as missing', async () => {
    const w = await roleWorld();
    const raw = async (objectId: number, format: string) => {
      const res = await fetchRaw(
        `/workspaces/${w.workspaceId}/records/export?objectId=${objectId}&format=${format}`,
        w.member.key,
      );
      return { status: res.status, text: await res.text() };
    };
    const csv = await raw(w.deal.id, 'csv');
    expect(csv.status).toBe(200);
    expect(csv.text.split('\r\n')[0]).not.toContain('salary');
    expect(csv.text).not.toContain('Big');
    const ndjson = await raw(w.deal.id, 'ndjson');
    expect(
      ndjson.text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).id),
    ).toEqual([w.mine.id]);
    expect((await raw(w.secret.id, 'csv')).text).toEqual((await raw(987654321, 'csv')).text);
  });

  it('names a hidden field as a missing one; a read-only one is 403 with nothing written', async () => {
    const w = await roleWorld();
    const { member, workspaceId, mine } = w;
    const path = `/workspaces/${workspaceId}/records/${mine.id}`;
    const patch = (fieldName: string) =>
      call('PATCH', path, { key: member.key, body: { fieldValues: [fv(fieldName, 1)] } });
    same(await patch('salary'), await patch('nothing'));
    const readOnly = await patch('stage');
    expect(readOnly.status).toBe(403);
    expect(readOnly.body.errors).toContainEqual(
      expect.objectContaining({ pointer: '/fieldValues/0', code: 'read_only_field' }),
    );
    const create = (fieldName: string) =>
      call('POST', '/records/batch', {
        key: member.key,
        body: [{ objectId: w.deal.id, fieldValues: [fv('title', 't'), fv(fieldName, 1)] }],
      });
    same(await create('salary'), await create('nothing'));
    expect((await create('stage')).status).toBe(403);
    const query = (name: string) =>
      call('POST', `/workspaces/${workspaceId}/records/query`, {
        key: member.key,
        body: { filter: { [name]: { eq: 1 } } },
      });
    same(await query('salary'), await query('nothing'));
    const sorted = (name: string) =>
      call('POST', `/workspaces/${workspaceId}/records/query`, { key: member.key, body: { sort: [{ field: name }] } });
    same(await sorted('salary'), await sorted('nothing'));
    const listed = (name: string) =>
      call('GET', `/workspaces/${workspaceId}/records?field.${name}=900`, { key: member.key });
    same(await listed('salary'), await listed('nothing'));
    // Nothing the refusals named was written.
    expect((await call('GET', `/records/${mine.id}`, { key: w.owner.key })).body.version).toBe(1);
  });

  it("cannot change, delete or see another's rows, and what the role does not allow is 403", async () => {
    const w = await roleWorld();
    const { member, workspaceId } = w;
    const other = `/workspaces/${workspaceId}/records/${w.ownersDeal.id}`;
    const none = `/workspaces/${workspaceId}/records/987654321`;
    same(
      await call('PATCH', other, { key: member.key, body: {} }),
      await call('PATCH', none, { key: member.key, body: {} }),
    );
    same(await call('DELETE', other, { key: member.key }), await call('DELETE', none, { key: member.key }));
    const batch = (id: number) => call('PATCH', '/records/batch', { key: member.key, body: [{ id, fieldValues: [] }] });
    same(await batch(w.ownersDeal.id), await batch(987654321));
    // Its own record: update yes, delete no (the role gives no delete).
    const del = await call('DELETE', `/workspaces/${workspaceId}/records/${w.mine.id}`, { key: member.key });
    expect(del.status).toBe(403);
    expect((await call('GET', `/records/${w.mine.id}`, { key: w.owner.key })).body.deleted).toBe(false);
    // An unlisted object cannot be created in, as a missing one.
    const create = (objectId: number) =>
      call('POST', '/records/batch', { key: member.key, body: [{ objectId, fieldValues: [] }] });
    same(await create(w.secret.id), await create(987654321));
  });

  it('takes a replaced role at once', async () => {
    const w = await roleWorld();
    expect((await call('GET', `/records/${w.mine.id}`, { key: w.member.key })).status).toBe(200);
    await admin('PUT', `/admin/roles/${w.role.id}`, {
      name: 'sales',
      objects: [{ objectId: w.secret.id, read: true }],
    });
    expectProblem(await call('GET', `/records/${w.mine.id}`, { key: w.member.key }), 404, 'not_found');
    expect((await call('GET', `/records/${w.secretRecord.id}`, { key: w.member.key })).status).toBe(200);
  });
});

async function fetchRaw(path: string, key: string): Promise<Response> {
  const { exports } = await import('cloudflare:workers');
  return exports.default.fetch(`http://records.test${path}`, { headers: { Authorization: `Bearer ${key}` } });
}
