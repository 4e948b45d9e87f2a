import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import {
  admin,
  call,
  createOne,
  expectProblem,
  newUser,
  newWorkspace,
  rowsRead,
  fv,
  walkReferencedBy,
} from './helpers.ts';

const COMPANY = { name: 'Company', nameTemplate: '{title}', fields: [{ name: 'title', type: 'text', required: true }] };

/**
 * Companies and contacts: a contact's `company` references one company (restrict), its `partners`
 * several (keep). The editor works in `workspaceId`; `hidden` is a company shared only with
 * `otherWorkspace` (made before the object was shared with the editor's), which the editor cannot read.
 */
async function setup() {
  const editor = await newUser('editor');
  const outsider = await newUser('outsider');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const otherWorkspace = await newWorkspace({ [outsider.id]: 'editor' });
  const company = (await admin('POST', '/admin/objects', { ...COMPANY, workspaceIds: [otherWorkspace] })).body;
  const hidden = await createOne(outsider.key, company.id, [fv('title', 'Hidden')]);
  await admin('PUT', `/admin/objects/${company.id}`, { ...COMPANY, workspaceIds: [workspaceId, otherWorkspace] });
  const contact = (
    await admin('POST', '/admin/objects', {
      name: 'Contact',
      workspaceIds: [workspaceId, otherWorkspace],
      nameTemplate: '{first}',
      fields: [
        { name: 'first', type: 'text', required: true },
        { name: 'company', type: 'reference', target: company.id },
        { name: 'partners', type: 'reference', target: company.id, multiple: true, onDelete: 'keep' },
        { name: 'email', type: 'email', unique: true },
      ],
    })
  ).body;
  const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
  const globex = await createOne(editor.key, company.id, [fv('title', 'Globex')]);
  return { editor, outsider, workspaceId, otherWorkspace, company, contact, acme, globex, hidden };
}

async function refs(recordId: number) {
  const rows = await env.DB.prepare('SELECT field, target_id FROM record_refs WHERE record_id = ? ORDER BY 1, 2')
    .bind(recordId)
    .all();
  return rows.results;
}

describe('reference fields: writes', () => {
  it('a create with references keeps them in order, and the index of references follows patches', async () => {
    const { editor, workspaceId, contact, acme, globex } = await setup();
    const ada = await createOne(editor.key, contact.id, [
      fv('first', 'Ada'),
      fv('company', acme.id),
      fv('partners', [globex.id, acme.id]),
    ]);
    expect(ada.fieldValues).toEqual([fv('first', 'Ada'), fv('company', acme.id), fv('partners', [globex.id, acme.id])]);
    expect(await refs(ada.id)).toEqual([
      { field: 'company', target_id: acme.id },
      { field: 'partners', target_id: acme.id },
      { field: 'partners', target_id: globex.id },
    ]);
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${ada.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('company', globex.id), fv('partners', null)] },
    });
    expect(patched.status).toBe(200);
    expect(await refs(ada.id)).toEqual([{ field: 'company', target_id: globex.id }]);
  });

  it('a missing, deleted, hidden or other-object id is refused alike at its pointer; nothing is written', async () => {
    const { editor, workspaceId, contact, company, acme, globex, hidden } = await setup();
    const other = await createOne(editor.key, contact.id, [fv('first', 'Other')]);
    const gone = await createOne(editor.key, company.id, [fv('title', 'Gone')]);
    expect((await call('DELETE', `/workspaces/${workspaceId}/records/${gone.id}`, { key: editor.key })).status).toBe(
      200,
    );
    const before = await env.DB.prepare('SELECT count(*) AS n FROM records').first<{ n: number }>();
    const answers = [];
    for (const id of [999_999, gone.id, hidden.id, other.id]) {
      const answer = await call('POST', '/records/batch', {
        key: editor.key,
        body: [
          { objectId: contact.id, fieldValues: [fv('first', 'A'), fv('company', acme.id)] },
          { objectId: contact.id, fieldValues: [fv('first', 'B'), fv('partners', [globex.id, id])] },
        ],
      });
      expectProblem(answer, 422, 'unprocessable');
      const { instance: _instance, requestId: _requestId, ...rest } = answer.body;
      answers.push(JSON.stringify(rest).replaceAll(String(id), 'ID'));
      expect(answer.body.errors).toEqual([
        {
          pointer: '/1/fieldValues/1/value/1',
          code: 'invalid_reference',
          message: `expected the id of a live record of object ${company.id} that you can read`,
        },
      ]);
    }
    expect(new Set(answers).size).toBe(1);
    const after = await env.DB.prepare('SELECT count(*) AS n FROM records').first<{ n: number }>();
    expect(after?.n).toBe(before?.n);
  });
});

describe('reference fields: deletes', () => {
  it('a referenced record is not deleted (409 naming readable referencers); once released it is', async () => {
    const { editor, outsider, workspaceId, otherWorkspace, contact, acme } = await setup();
    const ada = await createOne(editor.key, contact.id, [fv('first', 'Ada'), fv('company', acme.id)]);
    const refused = await call('DELETE', `/workspaces/${workspaceId}/records/${acme.id}`, { key: editor.key });
    expectProblem(refused, 409, 'record_referenced');
    expect(refused.body.detail).toBe('1 live record references this record; change or delete them first.');
    expect(refused.body.errors).toEqual([
      {
        recordId: ada.id,
        code: 'record_referenced',
        message: `record ${ada.id} of object ${contact.id} references it by company`,
      },
    ]);
    const read = await call('GET', `/records/${acme.id}`, { key: editor.key });
    expect(read.body.deleted).toBe(false);
    // Released, Acme can be deleted: here by the outsider, an editor of the other workspace.
    const released = await call('PATCH', `/workspaces/${workspaceId}/records/${ada.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('company', null)] },
    });
    expect(released.status).toBe(200);
    const deleted = await call('DELETE', `/workspaces/${otherWorkspace}/records/${acme.id}`, { key: outsider.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body.deleted).toBe(true);
  });

  it('a keep reference lets a delete through; restoring a record with a deleted target is refused', async () => {
    const { editor, workspaceId, contact, acme, globex } = await setup();
    const ada = await createOne(editor.key, contact.id, [fv('first', 'Ada'), fv('partners', [globex.id])]);
    const deleted = await call('DELETE', `/workspaces/${workspaceId}/records/${globex.id}`, { key: editor.key });
    expect(deleted.status).toBe(200);
    const read = await call('GET', `/records/${ada.id}`, { key: editor.key });
    expect(read.body.fieldValues).toEqual([fv('first', 'Ada'), fv('partners', [globex.id])]);

    const bob = await createOne(editor.key, contact.id, [fv('first', 'Bob'), fv('company', acme.id)]);
    expect((await call('DELETE', `/workspaces/${workspaceId}/records/${bob.id}`, { key: editor.key })).status).toBe(
      200,
    );
    // Bob is deleted, so nothing live references Acme any more.
    expect((await call('DELETE', `/workspaces/${workspaceId}/records/${acme.id}`, { key: editor.key })).status).toBe(
      200,
    );
    const restore = await call('POST', `/workspaces/${workspaceId}/records/${bob.id}/restore`, { key: editor.key });
    expectProblem(restore, 422, 'unprocessable');
    expect(restore.body.errors[0].code).toBe('invalid_reference');
    expect((await call('GET', `/records/${bob.id}`, { key: editor.key })).body.deleted).toBe(true);
    // Restoring the target first is always allowed; then the referencing record comes back.
    expect(
      (await call('POST', `/workspaces/${workspaceId}/records/${acme.id}/restore`, { key: editor.key })).status,
    ).toBe(200);
    const back = await call('POST', `/workspaces/${workspaceId}/records/${bob.id}/restore`, { key: editor.key });
    expect(back.status).toBe(200);
    expect(back.body.deleted).toBe(false);
  });

  it('20 deletes racing 20 writes that reference their targets: no live record references a deleted one', async () => {
    const { editor, workspaceId, contact, company } = await setup();
    const targets: any[] = [];
    for (let i = 0; i < 20; i++) targets.push(await createOne(editor.key, company.id, [fv('title', `T${i}`)]));
    const patchable: any[] = [];
    for (let i = 0; i < 20; i++) patchable.push(await createOne(editor.key, contact.id, [fv('first', `P${i}`)]));
    const gone: any[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await createOne(editor.key, contact.id, [fv('first', `R${i}`), fv('company', targets[i].id)]);
      gone.push(r);
    }
    // Each restorable record first lets go of its target (deleted, so nothing live holds it).
    for (const r of gone)
      expect((await call('DELETE', `/workspaces/${workspaceId}/records/${r.id}`, { key: editor.key })).status).toBe(
        200,
      );
    const races = targets.flatMap((target, i) => {
      const write =
        i % 3 === 0
          ? call('POST', '/records/batch', {
              key: editor.key,
              body: [{ objectId: contact.id, fieldValues: [fv('first', `C${i}`), fv('company', target.id)] }],
            })
          : i % 3 === 1
            ? call('PATCH', `/workspaces/${workspaceId}/records/${patchable[i].id}`, {
                key: editor.key,
                body: { fieldValues: [fv('company', target.id)] },
              })
            : call('POST', `/workspaces/${workspaceId}/records/${gone[i].id}/restore`, { key: editor.key });
      const del = call('DELETE', `/workspaces/${workspaceId}/records/${target.id}`, { key: editor.key });
      return i % 2 === 0 ? [write, del] : [del, write];
    });
    const answers = await Promise.all(races);
    for (const answer of answers) expect([200, 201, 409, 422]).toContain(answer.status);
    const dangling = await env.DB.prepare(
      `SELECT r.record_id, r.target_id FROM record_refs r JOIN records s ON s.id = r.record_id AND s.deleted = 0
       JOIN records t ON t.id = r.target_id AND t.deleted = 1 WHERE r.field = 'company'`,
    ).all();
    expect(dangling.results).toEqual([]);
    // Each pair ended one way or the other: the write, or the delete.
    for (let i = 0; i < 20; i++) {
      const [a, b] = [answers[2 * i], answers[2 * i + 1]];
      const statuses = [a?.status, b?.status].sort();
      expect(statuses.filter((s) => s === 200 || s === 201).length).toBe(1);
    }
  });
});

describe('reference fields: definitions', () => {
  it('a reference needs a known target, takes no index flags, and keeps its type, target and arity', async () => {
    const { workspaceId, company, contact } = await setup();
    const base = { name: 'Deal', workspaceIds: [workspaceId] };
    const missing = await admin('POST', '/admin/objects', { ...base, fields: [{ name: 'c', type: 'reference' }] });
    expectProblem(missing, 400, 'invalid_request');
    expect(missing.body.errors).toEqual([
      { pointer: '/fields/0/target', code: 'required', message: 'a reference field needs a target' },
    ]);
    const flags = await admin('POST', '/admin/objects', {
      ...base,
      fields: [
        { name: 'c', type: 'reference', target: company.id, indexed: true },
        { name: 't', type: 'text', target: company.id },
      ],
    });
    expectProblem(flags, 400, 'invalid_request');
    expect(flags.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual([
      '/fields/0/indexed',
      '/fields/1/target',
    ]);
    const unknown = await admin('POST', '/admin/objects', {
      ...base,
      fields: [{ name: 'c', type: 'reference', target: 99_999 }],
    });
    expectProblem(unknown, 422, 'unprocessable');
    expect(unknown.body.errors).toEqual([
      { pointer: '/fields/0/target', code: 'unknown_object', message: 'no such object' },
    ]);

    const current = (await admin('GET', `/admin/objects/${contact.id}`)).body;
    const { id: _id, version: _version, ...input } = current;
    const retarget = await admin('PUT', `/admin/objects/${contact.id}`, {
      ...input,
      fields: input.fields.map((f: { name: string }) => (f.name === 'company' ? { ...f, target: contact.id } : f)),
    });
    expectProblem(retarget, 422, 'unprocessable');
    expect(retarget.body.errors[0]).toMatchObject({ pointer: '/fields/1/target', code: 'fixed' });
    const retype = await admin('PUT', `/admin/objects/${contact.id}`, {
      ...input,
      fields: input.fields.map((f: { name: string }) =>
        f.name === 'first' ? { ...f, type: 'reference', target: 1 } : f,
      ),
    });
    expectProblem(retype, 422, 'unprocessable');
    expect(retype.body.errors[0]).toMatchObject({ pointer: '/fields/0/type', code: 'fixed' });
    expect((await admin('GET', `/admin/objects/${contact.id}`)).body.version).toBe(current.version);
    // Self references are allowed: a contact's manager.
    const self = await admin('PUT', `/admin/objects/${contact.id}`, {
      ...input,
      fields: [...input.fields, { name: 'manager', type: 'reference', target: contact.id, onDelete: 'keep' }],
    });
    expect(self.status).toBe(200);
  });
});

describe('reference fields: every write path checks them', () => {
  it('a patch, a patch batch and an upsert are refused at the pointer of the bad id, and change nothing', async () => {
    const { editor, workspaceId, contact, acme, hidden } = await setup();
    const ada = await createOne(editor.key, contact.id, [fv('first', 'Ada'), fv('company', acme.id)]);
    const one = await call('PATCH', `/workspaces/${workspaceId}/records/${ada.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('partners', [acme.id, hidden.id])] },
    });
    expectProblem(one, 422, 'unprocessable');
    expect(one.body.errors).toMatchObject([{ pointer: '/fieldValues/0/value/1', code: 'invalid_reference' }]);
    const batch = await call('PATCH', `/workspaces/${workspaceId}/records/batch`, {
      key: editor.key,
      body: [{ id: ada.id, fieldValues: [fv('first', 'Ada B'), fv('company', hidden.id)] }],
    });
    expectProblem(batch, 422, 'unprocessable');
    expect(batch.body.errors).toMatchObject([{ pointer: '/0/fieldValues/1/value', code: 'invalid_reference' }]);
    const upsert = await call('POST', `/objects/${contact.id}/records/upsert`, {
      key: editor.key,
      body: {
        matchOn: 'email',
        items: [
          { fieldValues: [fv('first', 'New'), fv('email', 'new@example.com'), fv('company', acme.id)] },
          { fieldValues: [fv('first', 'Other'), fv('email', 'other@example.com'), fv('partners', [hidden.id])] },
        ],
      },
    });
    expectProblem(upsert, 422, 'unprocessable');
    expect(upsert.body.errors).toMatchObject([
      { pointer: '/items/1/fieldValues/2/value/0', code: 'invalid_reference' },
    ]);
    const read = await call('GET', `/records/${ada.id}`, { key: editor.key });
    expect(read.body.version).toBe(ada.version);
    expect(read.body.fieldValues).toEqual(ada.fieldValues);
    const created = await env.DB.prepare("SELECT id FROM records WHERE object_id = ? AND name IN ('New', 'Other')")
      .bind(contact.id)
      .all();
    expect(created.results).toEqual([]);
  });
});

describe('reference fields: queries', () => {
  it('eq, ne, in, nin, exists and contains find records by reference; a sort by one walks its keys', async () => {
    const { editor, workspaceId, contact, acme, globex } = await setup();
    const a = await createOne(editor.key, contact.id, [fv('first', 'A'), fv('company', acme.id)]);
    const b = await createOne(editor.key, contact.id, [
      fv('first', 'B'),
      fv('company', globex.id),
      fv('partners', [acme.id, globex.id]),
    ]);
    const c = await createOne(editor.key, contact.id, [fv('first', 'C'), fv('partners', [globex.id])]);
    const ids = async (filter: unknown, extra: Record<string, unknown> = {}) => {
      const answer = await call('POST', `/workspaces/${workspaceId}/records/query`, {
        key: editor.key,
        body: { filter: { and: [{ field: 'objectId', op: 'eq', value: contact.id }, filter] }, ...extra },
      });
      expect(answer.status).toBe(200);
      return answer.body.items.map((r: { id: number }) => r.id);
    };
    expect(await ids({ field: 'company', op: 'eq', value: acme.id })).toEqual([a.id]);
    expect(await ids({ field: 'company', op: 'ne', value: acme.id })).toEqual([b.id, c.id]);
    expect(await ids({ field: 'company', op: 'in', value: [acme.id, globex.id] })).toEqual([a.id, b.id]);
    expect(await ids({ field: 'company', op: 'nin', value: [acme.id] })).toEqual([b.id, c.id]);
    expect(await ids({ field: 'company', op: 'exists', value: false })).toEqual([c.id]);
    expect(await ids({ field: 'partners', op: 'contains', value: globex.id })).toEqual([b.id, c.id]);
    expect(await ids({ field: 'partners', op: 'eq', value: acme.id })).toEqual([b.id]);
    expect(await ids({ field: 'partners', op: 'in', value: [acme.id, globex.id] })).toEqual([b.id, c.id]);
    expect(await ids({ field: 'partners', op: 'nin', value: [acme.id] })).toEqual([a.id, c.id]);
    expect(await ids({ field: 'partners', op: 'ne', value: globex.id })).toEqual([a.id]);
    const sorted = await ids(
      { field: 'first', op: 'exists', value: true },
      { sort: [{ field: 'company', direction: 'desc' }] },
    );
    expect(sorted).toEqual([b.id, a.id, c.id]);
    const bad = await call('POST', `/workspaces/${workspaceId}/records/query`, {
      key: editor.key,
      body: {
        filter: { field: 'company', op: 'contains', value: acme.id },
        sort: [{ field: 'partners' }],
      },
    });
    expectProblem(bad, 400, 'invalid_request');
    expect(bad.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/filter/op', '/sort/0/field']);
    const wrongValue = await call('POST', `/workspaces/${workspaceId}/records/query`, {
      key: editor.key,
      body: { filter: { field: 'partners', op: 'contains', value: 'acme' } },
    });
    expectProblem(wrongValue, 400, 'invalid_request');
    expect(wrongValue.body.errors).toMatchObject([{ pointer: '/filter/value', message: 'expected a record id' }]);
  });

  it('an eq on a reference walks its keys: full pages at a cost that grows with the page', async () => {
    const { editor, workspaceId, contact, acme, globex } = await setup();
    const values = (i: number) => [fv('first', `N${i}`), fv('company', i % 10 === 0 ? acme.id : globex.id)];
    for (let k = 0; k < 6; k++)
      expect(
        (
          await call('POST', '/records/batch', {
            key: editor.key,
            body: Array.from({ length: 20 }, (_, j) => ({ objectId: contact.id, fieldValues: values(k * 20 + j) })),
          })
        ).status,
      ).toBe(201);
    for (const [target, expected] of [
      [acme.id, 12],
      [globex.id, 108],
    ] as const) {
      const seen: number[] = [];
      let cursor: string | undefined;
      do {
        const answer = await call('POST', `/workspaces/${workspaceId}/records/query`, {
          key: editor.key,
          body: { filter: { field: 'company', op: 'eq', value: target }, limit: 10, ...(cursor ? { cursor } : {}) },
        });
        expect(answer.status).toBe(200);
        if (answer.body.nextCursor !== null) expect(answer.body.items).toHaveLength(10);
        expect(rowsRead(answer)).toBeLessThan(200);
        seen.push(...answer.body.items.map((r: { id: number }) => r.id));
        cursor = answer.body.nextCursor ?? undefined;
      } while (cursor !== undefined);
      expect(seen).toHaveLength(expected);
      expect(new Set(seen).size).toBe(expected);
    }
  });
});

describe('reference fields: expand and referenced-by', () => {
  /**
   * The access matrix: `reader` reads only `workspaceId`; `hidden` is a company only the outsider's
   * workspace holds; Ada (shared with both workspaces) references Acme, Globex (then deleted: keep)
   * and, as the outsider wrote it, the hidden company.
   */
  async function matrix() {
    const s = await setup();
    const reader = await newUser('reader');
    await admin('PUT', `/admin/workspaces/${s.workspaceId}/members/${reader.id}`, { role: 'viewer' });
    const ada = await createOne(s.outsider.key, s.contact.id, [
      fv('first', 'Ada'),
      fv('company', s.hidden.id),
      fv('partners', [s.globex.id, s.hidden.id, s.acme.id]),
    ]);
    const bob = await createOne(s.editor.key, s.contact.id, [fv('first', 'Bob'), fv('company', s.acme.id)]);
    expect(
      (await call('DELETE', `/workspaces/${s.workspaceId}/records/${s.globex.id}`, { key: s.editor.key })).status,
    ).toBe(200);
    return { ...s, reader, ada, bob };
  }
  const shown = (r: { id: number; name: string }, objectId: number, deleted = false) => ({
    id: r.id,
    objectId,
    name: r.name,
    deleted,
  });

  it('a read, a list and a query expand what the caller can read, and null (or nothing) for the rest', async () => {
    const { reader, outsider, workspaceId, company, contact, acme, globex, hidden, ada, bob } = await matrix();
    const one = await call('GET', `/records/${ada.id}?expand=company,partners`, { key: reader.key });
    expect(one.status).toBe(200);
    expect(one.body.fieldValues).toEqual(ada.fieldValues);
    expect(one.body.expanded).toEqual({
      company: null,
      partners: [shown(globex, company.id, true), shown(acme, company.id)],
    });
    const theirs = await call('GET', `/records/${ada.id}?expand=company`, { key: outsider.key });
    expect(theirs.body.expanded).toEqual({ company: shown(hidden, company.id) });

    const list = await call('GET', `/workspaces/${workspaceId}/records?objectId=${contact.id}&expand=company`, {
      key: reader.key,
    });
    expect(list.status).toBe(200);
    const byId = new Map(list.body.items.map((r: { id: number; expanded: unknown }) => [r.id, r.expanded]));
    expect(byId.get(ada.id)).toEqual({ company: null });
    expect(byId.get(bob.id)).toEqual({ company: shown(acme, company.id) });

    const query = await call('POST', `/workspaces/${workspaceId}/records/query`, {
      key: reader.key,
      body: { filter: { field: 'company', op: 'eq', value: acme.id }, fields: ['first'], expand: ['company'] },
    });
    expect(query.body.items).toEqual([
      expect.objectContaining({
        id: bob.id,
        fieldValues: [fv('first', 'Bob')],
        expanded: { company: shown(acme, company.id) },
      }),
    ]);
    // Without expand, no `expanded` at all.
    expect((await call('GET', `/records/${bob.id}`, { key: reader.key })).body.expanded).toBeUndefined();
  });

  it('expand costs one D1 read for a page, and refuses a field that is not a reference', async () => {
    const { reader, workspaceId, contact, ada } = await matrix();
    const plain = await call('GET', `/workspaces/${workspaceId}/records?objectId=${contact.id}`, { key: reader.key });
    const expanded = await call('GET', `/workspaces/${workspaceId}/records?objectId=${contact.id}&expand=partners`, {
      key: reader.key,
    });
    const trips = (a: { headers: Headers }) => {
      const match = /d1;dur=[\d.]+;desc="(\d+) round trip/.exec(a.headers.get('Server-Timing') ?? '');
      if (match === null) throw new Error('no D1 round trips in Server-Timing');
      return Number(match[1]);
    };
    expect(trips(plain)).toBe(1);
    expect(trips(expanded)).toBe(2);
    expect(expanded.body.items.length).toBeGreaterThan(1);
    for (const [path, parameter] of [
      [`/records/${ada.id}?expand=first`, 'expand'],
      [`/records/${ada.id}?expand=nope`, 'expand'],
      [`/workspaces/${workspaceId}/records?expand=first`, 'expand'],
    ] as const) {
      const answer = await call('GET', path, { key: reader.key });
      expectProblem(answer, 400, 'invalid_request');
      expect(answer.body.errors[0].query).toBe(parameter);
    }
    const query = await call('POST', `/workspaces/${workspaceId}/records/query`, {
      key: reader.key,
      body: { expand: ['first', 'company', 'company'] },
    });
    expectProblem(query, 400, 'invalid_request');
    expect(query.body.errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code])).toEqual([
      ['/expand/0', 'not_a_reference'],
      ['/expand/2', 'duplicate'],
    ]);
  });

  it('referenced-by lists live readable referencers in pages; 404 to one who cannot read the record', async () => {
    const { reader, outsider, editor, workspaceId, contact, acme, hidden, ada, bob } = await matrix();
    const more = [];
    for (let i = 0; i < 4; i++)
      more.push(await createOne(editor.key, contact.id, [fv('first', `M${i}`), fv('company', acme.id)]));
    expect((await call('DELETE', `/workspaces/${workspaceId}/records/${more[3].id}`, { key: editor.key })).status).toBe(
      200,
    );
    const seen = (await walkReferencedBy(reader.key, acme.id, 2)).items;
    const item = (r: { id: number; name: string }, field: string) => ({
      recordId: r.id,
      objectId: contact.id,
      field,
      name: r.name,
    });
    expect(seen).toEqual([
      item(bob, 'company'),
      item(more[0], 'company'),
      item(more[1], 'company'),
      item(more[2], 'company'),
      item(ada, 'partners'),
    ]);
    // The hidden company: the reader cannot read it, so it is missing to them; its owner sees Ada.
    const refused = await call('GET', `/records/${hidden.id}/referenced-by`, { key: reader.key });
    const missing = await call('GET', `/records/999999/referenced-by`, { key: reader.key });
    expectProblem(refused, 404, 'not_found');
    const { instance: _a, requestId: _b, ...refusedBody } = refused.body;
    const { instance: _c, requestId: _d, ...missingBody } = missing.body;
    expect(refusedBody).toEqual(missingBody);
    const owner = await call('GET', `/records/${hidden.id}/referenced-by`, { key: outsider.key });
    expect(owner.body.items.map((r: { recordId: number; field: string }) => [r.recordId, r.field])).toEqual([
      [ada.id, 'company'],
      [ada.id, 'partners'],
    ]);
    const forged = await call('GET', `/records/${acme.id}/referenced-by?cursor=abc.def`, { key: reader.key });
    expectProblem(forged, 400, 'invalid_request');
  });
});

describe('reference fields: what redefinitions may not do (from a review)', () => {
  it('a reference taken out cannot come back, a field cannot become one, keep cannot become restrict', async () => {
    const { editor, contact, company, acme } = await setup();
    await createOne(editor.key, contact.id, [fv('first', 'Ada'), fv('company', acme.id)]);
    const current = (await admin('GET', `/admin/objects/${contact.id}`)).body;
    const { id: _id, version: _version, ...input } = current;
    const without = input.fields.filter((f: { name: string }) => f.name !== 'company');
    expect((await admin('PUT', `/admin/objects/${contact.id}`, { ...input, fields: without })).status).toBe(200);
    const back = await admin('PUT', `/admin/objects/${contact.id}`, {
      ...input,
      fields: [...without, { name: 'company', type: 'reference', target: contact.id }],
    });
    expectProblem(back, 422, 'unprocessable');
    expect(back.body.errors).toMatchObject([{ pointer: '/fields/3/name', code: 'fixed' }]);
    const again = await admin('PUT', `/admin/objects/${contact.id}`, {
      ...input,
      fields: [...without, { name: 'company', type: 'reference', target: company.id }],
    });
    expectProblem(again, 422, 'unprocessable');
    const first = await admin('PUT', `/admin/objects/${contact.id}`, {
      ...input,
      fields: without.map((f: { name: string }) =>
        f.name === 'first' ? { name: 'first', type: 'reference', target: company.id } : f,
      ),
    });
    expect(first.body.errors).toMatchObject([{ pointer: '/fields/0/type', code: 'fixed' }]);
    const restrict = await admin('PUT', `/admin/objects/${contact.id}`, {
      ...input,
      fields: without.map((f: { name: string }) => (f.name === 'partners' ? { ...f, onDelete: 'restrict' } : f)),
    });
    expect(restrict.body.errors).toMatchObject([{ pointer: '/fields/1/onDelete', code: 'fixed' }]);
    // Referenced-by and deletes follow the current definition: the field taken out references nothing.
    expect((await call('GET', `/records/${acme.id}/referenced-by`, { key: editor.key })).body.items).toEqual([]);
  });

  it('a record referencing by two fields is counted once in a refused delete', async () => {
    const { editor, workspaceId, contact, company, acme } = await setup();
    const current = (await admin('GET', `/admin/objects/${contact.id}`)).body;
    const { id: _id, version: _version, ...input } = current;
    await admin('PUT', `/admin/objects/${contact.id}`, {
      ...input,
      fields: [...input.fields, { name: 'employer', type: 'reference', target: company.id }],
    });
    const ada = await createOne(editor.key, contact.id, [
      fv('first', 'Ada'),
      fv('company', acme.id),
      fv('employer', acme.id),
    ]);
    const refused = await call('DELETE', `/workspaces/${workspaceId}/records/${acme.id}`, { key: editor.key });
    expectProblem(refused, 409, 'record_referenced');
    expect(refused.body.detail).toBe('1 live record references this record; change or delete them first.');
    expect(refused.body.errors).toEqual([
      {
        recordId: ada.id,
        code: 'record_referenced',
        message: `record ${ada.id} of object ${contact.id} references it by company, employer`,
      },
    ]);
  });

  it('expand refuses a field that some object in view holds as a plain number, and a second expand', async () => {
    const { editor, workspaceId, contact, acme } = await setup();
    await admin('POST', '/admin/objects', {
      name: 'Other',
      workspaceIds: [workspaceId],
      fields: [{ name: 'company', type: 'integer' }],
    });
    const ada = await createOne(editor.key, contact.id, [fv('first', 'Ada'), fv('company', acme.id)]);
    const list = await call('GET', `/workspaces/${workspaceId}/records?expand=company`, { key: editor.key });
    expectProblem(list, 400, 'invalid_request');
    expect(list.body.errors).toMatchObject([{ query: 'expand', code: 'not_a_reference' }]);
    const twice = await call('GET', `/records/${ada.id}?expand=company&expand=company`, { key: editor.key });
    expectProblem(twice, 400, 'invalid_request');
    expect(twice.body.errors).toMatchObject([{ query: 'expand', code: 'duplicate' }]);
  });
});
