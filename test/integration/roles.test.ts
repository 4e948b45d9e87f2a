import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/http/auth.ts';
import { Meter } from '../../src/storage/meter.ts';
import { Store } from '../../src/storage/store.ts';
import { DEFAULT_TENANT } from '../../src/domain/tenant.ts';
import { admin, call, expectProblem, fv, newUser, newWorkspace } from './helpers.ts';
import { roleWorld } from './role-world.ts';

/**
 * Roles a tenant's administrator defines: per object, rights, own rows, hidden and read-only
 * fields; what each path shows a member holding one. The access matrix crosses every operation
 * with every limit; these are the whole stories.
 */

const DEAL_FIELDS = [
  { name: 'title', type: 'text', required: true },
  { name: 'salary', type: 'integer', indexed: true },
  { name: 'stage', type: 'select', options: ['lead', 'won'] },
  { name: 'note', type: 'text' },
];

const withoutHidden = (record: { fieldValues: { fieldName: string }[] }) => ({
  ...record,
  fieldValues: record.fieldValues.filter((v) => !['salary', 'link'].includes(v.fieldName)),
});

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

describe('roles against definitions', () => {
  it('keeps a required field from being hidden from creators, and a hidden field out of the name later', async () => {
    const workspaceId = await newWorkspace();
    const definition = {
      name: 'O',
      workspaceIds: [workspaceId],
      fields: [
        { name: 't', type: 'text', required: true },
        { name: 's', type: 'text' },
      ],
    };
    const object = (await admin('POST', '/admin/objects', definition)).body;
    const creator = await admin('POST', '/admin/roles', {
      name: `creator ${Math.random()}`,
      objects: [{ objectId: object.id, read: true, create: true, fields: { t: 'hidden' } }],
    });
    expect([creator.status, creator.body.errors]).toEqual([
      422,
      [
        {
          pointer: '/objects/0/fields/t',
          code: 'required_field',
          message: 'a member who creates records must be able to give this required field',
        },
      ],
    ]);
    const reader = await admin('POST', '/admin/roles', {
      name: `reader ${Math.random()}`,
      objects: [{ objectId: object.id, read: true, fields: { s: 'hidden' } }],
    });
    expect(reader.status).toBe(201);
    const named = await admin('PUT', `/admin/objects/${object.id}`, { ...definition, nameTemplate: '{t} {s}' });
    expect([named.status, named.body.errors]).toEqual([
      422,
      [{ pointer: '/nameTemplate', code: 'hidden_field', message: 'a role hides s' }],
    ]);
    expect((await admin('GET', `/admin/objects/${object.id}`)).body.version).toBe(1);
    expect((await admin('PUT', `/admin/objects/${object.id}`, { ...definition, nameTemplate: '{t}' })).status).toBe(
      200,
    );
  });

  it('with several memberships, a role that reads opens no field another role keeps read-only', async () => {
    const owner = await newUser('owner');
    const member = await newUser('member');
    const a = await newWorkspace({ [owner.id]: 'editor' });
    const b = await newWorkspace({ [member.id]: 'viewer' });
    const object = (await admin('POST', '/admin/objects', { name: 'O', workspaceIds: [a, b], fields: DEAL_FIELDS }))
      .body;
    const role = await admin('POST', '/admin/roles', {
      name: `updater ${Math.random()}`,
      objects: [{ objectId: object.id, read: true, update: true, fields: { salary: 'read' } }],
    });
    await admin('PUT', `/admin/workspaces/${a}/members/${member.id}`, { roleId: role.body.id });
    const record = (
      await call('POST', '/records/batch', {
        key: owner.key,
        body: [{ objectId: object.id, fieldValues: [fv('title', 't'), fv('salary', 1)] }],
      })
    ).body[0].record;
    const patch = (fieldName: string, value: unknown) =>
      call('PATCH', '/records/batch', {
        key: member.key,
        body: [{ id: record.id, fieldValues: [fv(fieldName, value)] }],
      });
    expectProblem(await patch('salary', 2), 403, 'forbidden');
    expect((await patch('note', 'n')).status).toBe(200);
    const read = (await call('GET', `/records/${record.id}`, { key: owner.key })).body;
    expect([read.version, read.fieldValues]).toEqual([2, [fv('title', 't'), fv('salary', 1), fv('note', 'n')]]);
  });
});

describe('a member under a role', () => {
  it('sees only the records and fields the role shows, on every read', async () => {
    const w = await roleWorld();
    const { member, workspaceId, mine } = w;
    const whole = (await call('GET', `/records/${mine.id}`, { key: w.owner.key })).body;
    expect(whole.fieldValues.map((v: { fieldName: string }) => v.fieldName).sort()).toEqual([
      'link',
      'note',
      'salary',
      'stage',
      'title',
    ]);
    const read = await call('GET', `/records/${mine.id}`, { key: member.key });
    expect(read.body).toEqual(withoutHidden(whole));
    const seen = [w.accountRecord.id, mine.id];
    const list = await call('GET', `/workspaces/${workspaceId}/records`, { key: member.key });
    expect(list.body.items.map((r: { id: number }) => r.id)).toEqual(seen);
    expect(list.body.items[1]).toEqual(read.body);
    // The rows a page read count the records the role passed over: a member's answer does not say them.
    expect(list.headers.get('Server-Timing')).not.toContain('rows');
    const owners = await call('GET', `/workspaces/${workspaceId}/records`, { key: w.owner.key });
    expect(owners.headers.get('Server-Timing')).toContain('rows');
    const query = await call('POST', `/workspaces/${workspaceId}/records/query`, {
      key: member.key,
      body: { count: true, filter: { field: 'objectId', op: 'eq', value: w.deal.id } },
    });
    expect([query.body.items, query.body.count.value]).toEqual([[read.body], 1]);
    const objects = await call('GET', `/workspaces/${workspaceId}/objects`, { key: member.key });
    expect(objects.body.items.map((o: { name: string }) => o.name)).toEqual(['Account', 'Deal', 'Note']);
    expect(objects.body.items[1].fields.map((f: { name: string }) => f.name)).toEqual([
      'title',
      'stage',
      'note',
      'code',
    ]);
    const feed = await call('GET', `/workspaces/${workspaceId}/changes`, { key: member.key });
    expect(feed.body.items.map((c: { recordId: number }) => c.recordId)).toEqual([
      w.accountRecord.id,
      mine.id,
      mine.id,
    ]);
    // The owner's change set salary, stage and link: the member's feed and history show the stage alone.
    expect(feed.body.items[2].fieldValues).toEqual([fv('stage', 'won')]);
    const history = await call('GET', `/records/${mine.id}/history`, { key: member.key });
    expect(history.body.items[0].changes).toEqual([{ fieldName: 'stage', from: null, to: 'won' }]);
    const me = await call('GET', '/me', { key: member.key });
    expect(me.body.workspaces).toEqual([{ workspaceId, name: 'ws', roleId: w.role.id, objects: w.role.objects }]);
  });

  it('exports only what the role shows, and an unlisted object as missing', async () => {
    const w = await roleWorld();
    const raw = async (objectId: number, format: string) => {
      const { exports } = await import('cloudflare:workers');
      const path = `/workspaces/${w.workspaceId}/records/export?objectId=${objectId}&format=${format}`;
      const res = await exports.default.fetch(`http://records.test${path}`, {
        headers: { Authorization: `Bearer ${w.member.key}` },
      });
      return { status: res.status, text: await res.text() };
    };
    const csv = await raw(w.deal.id, 'csv');
    expect(csv.status).toBe(200);
    expect(csv.text.split('\r\n')[0]).toBe('id,name,version,updatedAt,title,stage,note,code');
    expect(csv.text).not.toContain('Big');
    const ndjson = await raw(w.deal.id, 'ndjson');
    expect(
      ndjson.text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([withoutHidden((await call('GET', `/records/${w.mine.id}`, { key: w.owner.key })).body)]);
    expect(await raw(w.secret.id, 'csv')).toEqual(await raw(w.secret.id + 1_000, 'csv'));
  });

  it('deletes its own records while its role lets it, and not once the role is replaced', async () => {
    const w = await roleWorld();
    const path = (id: number) => `/workspaces/${w.workspaceId}/records/${id}`;
    const deleted = await call('DELETE', path(w.mine.id), { key: w.member.key });
    expect([deleted.status, deleted.body.deleted]).toEqual([200, true]);
    expect((await call('POST', `${path(w.mine.id)}/restore`, { key: w.member.key })).status).toBe(200);
    const rules = w.role.objects.map((rule: { objectId: number }) =>
      rule.objectId === w.deal.id ? { ...rule, delete: false } : rule,
    );
    await admin('PUT', `/admin/roles/${w.role.id}`, { name: w.role.name, objects: rules });
    expectProblem(await call('DELETE', path(w.mine.id), { key: w.member.key }), 403, 'forbidden');
    expect((await call('GET', `/records/${w.mine.id}`, { key: w.owner.key })).body.deleted).toBe(false);
  });

  it('is told a delete is held back by records its role hides, and never which', async () => {
    const w = await roleWorld();
    const rules = w.role.objects.map((rule: { objectId: number }) =>
      rule.objectId === w.account.id ? { ...rule, delete: true } : rule,
    );
    await admin('PUT', `/admin/roles/${w.role.id}`, { name: w.role.name, objects: rules });
    // The owner's deal (another's row) and the member's own (by a field hidden from them) hold the account.
    const refused = await call('DELETE', `/workspaces/${w.workspaceId}/records/${w.accountRecord.id}`, {
      key: w.member.key,
    });
    expect([refused.status, refused.body.code, refused.body.errors]).toEqual([409, 'record_referenced', []]);
    const owners = await call('DELETE', `/workspaces/${w.workspaceId}/records/${w.accountRecord.id}`, {
      key: w.owner.key,
    });
    expect(owners.body.errors.map((e: { recordId: number }) => e.recordId).sort()).toEqual(
      [w.ownersDeal.id, w.mine.id].sort(),
    );
  });

  it('takes a replaced role at once', async () => {
    const w = await roleWorld();
    expect((await call('GET', `/records/${w.mine.id}`, { key: w.member.key })).status).toBe(200);
    await admin('PUT', `/admin/roles/${w.role.id}`, {
      name: w.role.name,
      objects: [{ objectId: w.secret.id, read: true }],
    });
    expectProblem(await call('GET', `/records/${w.mine.id}`, { key: w.member.key }), 404, 'not_found');
    expect((await call('GET', `/records/${w.secretRecord.id}`, { key: w.member.key })).status).toBe(200);
  });

  it("decides in SQL before a record's values are read: storage gives nothing of a record the role hides", async () => {
    const w = await roleWorld();
    const store = new Store(env.DB, new Meter(), DEFAULT_TENANT);
    const hash = await sha256Hex(w.member.key);
    for (const id of [w.ownersDeal.id, w.secretRecord.id]) {
      expect((await store.readableRecord(hash, id, undefined)).records.size).toBe(0);
      expect((await store.readableRecord(hash, id, w.workspaceId)).records.size).toBe(0);
      expect((await store.recordStanding(hash, id)).standing).toBeUndefined();
    }
    expect((await store.readableRecord(hash, w.mine.id, w.workspaceId)).records.get(w.mine.id)?.version).toBe(2);
    expect((await store.recordStanding(hash, w.mine.id)).standing?.version).toBe(2);
  });
});
