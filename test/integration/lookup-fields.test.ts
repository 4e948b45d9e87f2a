import { describe, expect, it } from 'vitest';
import { admin, call, createOne, fv, newUser, newWorkspace, queryRecords, valuesOf, roundTrips } from './helpers.ts';

/**
 * Lookup fields: a record shows the value its reference's record holds in a field, read when the
 * record is read, as the reader may see that record; never written, filtered or sorted.
 */

async function setup() {
  const editor = await newUser('editor');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const object = async (definition: Record<string, unknown>) => {
    const made = await admin('POST', '/admin/objects', definition);
    expect(made.status).toBe(201);
    return made.body;
  };
  const company = await object({
    name: 'Company',
    workspaceIds: [workspaceId],
    nameTemplate: '{title}',
    fields: [
      { name: 'title', type: 'text' },
      { name: 'size', type: 'integer' },
    ],
  });
  const base = [
    { name: 'label', type: 'text' },
    { name: 'company', type: 'reference', target: company.id },
    { name: 'partners', type: 'reference', target: company.id, multiple: true, onDelete: 'keep' },
  ];
  const lookups = [
    { name: 'companyTitle', type: 'lookup', reference: 'company', field: 'title' },
    { name: 'partnerSizes', type: 'lookup', reference: 'partners', field: 'size' },
  ];
  const deal = await object({
    name: 'Deal',
    workspaceIds: [workspaceId],
    nameTemplate: '{label}',
    fields: [...base, ...lookups],
  });
  const plain = await object({ name: 'Plain', workspaceIds: [workspaceId], nameTemplate: '{label}', fields: base });
  // A member who reads companies without their size, and one who cannot read companies at all.
  const member = async (objects: unknown[]) => {
    const user = await newUser('member');
    const role = await admin('POST', '/admin/roles', { name: `role ${Math.random()}`, objects });
    expect(role.status).toBe(201);
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${user.id}`, { roleId: role.body.id });
    return user;
  };
  const sizeBlind = await member([
    { objectId: deal.id, read: true },
    { objectId: company.id, read: true, fields: { size: 'hidden' } },
  ]);
  const companyBlind = await member([{ objectId: deal.id, read: true }]);
  return { editor, sizeBlind, companyBlind, workspaceId, company, deal, plain };
}

describe('lookup fields', () => {
  it('show the referenced records values as they are when read, as the reader may see them', async () => {
    const { editor, sizeBlind, companyBlind, workspaceId, company, deal } = await setup();
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme'), fv('size', 10)]);
    const globex = await createOne(editor.key, company.id, [fv('title', 'Globex'), fv('size', 20)]);
    const initech = await createOne(editor.key, company.id, [fv('title', 'Initech')]);
    const made = await createOne(editor.key, deal.id, [
      fv('label', 'd'),
      fv('company', acme.id),
      fv('partners', [globex.id, initech.id, acme.id]),
    ]);
    // Never stored: the write's answer has none.
    expect(valuesOf(made)).not.toHaveProperty('companyTitle');
    const read = await call('GET', `/records/${made.id}`, { key: editor.key });
    expect(valuesOf(read.body)).toMatchObject({ companyTitle: 'Acme', partnerSizes: [20, 10] });

    await call('PATCH', `/workspaces/${workspaceId}/records/${acme.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('title', 'Acme Ltd')] },
    });
    const again = await call('GET', `/records/${made.id}`, { key: editor.key });
    expect(valuesOf(again.body).companyTitle).toBe('Acme Ltd');
    // As the reader may see the records read: a field hidden from them there, or a record they cannot read, gives none.
    const noSizes = await call('GET', `/records/${made.id}`, { key: sizeBlind.key });
    expect(valuesOf(noSizes.body)).toEqual({
      label: 'd',
      company: acme.id,
      partners: [globex.id, initech.id, acme.id],
      companyTitle: 'Acme Ltd',
    });
    const nothing = await call('GET', `/records/${made.id}`, { key: companyBlind.key });
    expect(valuesOf(nothing.body)).not.toHaveProperty('companyTitle');
    expect(valuesOf(nothing.body)).not.toHaveProperty('partnerSizes');
    // A deleted record gives nothing.
    await call('DELETE', `/workspaces/${workspaceId}/records/${globex.id}`, { key: editor.key });
    const after = await call('GET', `/records/${made.id}`, { key: editor.key });
    expect(valuesOf(after.body).partnerSizes).toEqual([10]);
  });

  it('cost a page of a list or a query one more D1 round trip at most', async () => {
    const { editor, workspaceId, company, deal, plain } = await setup();
    const companies = [];
    for (let i = 0; i < 5; i++)
      companies.push(await createOne(editor.key, company.id, [fv('title', `C${i}`), fv('size', i)]));
    for (let i = 0; i < 12; i++)
      for (const object of [deal, plain])
        await createOne(editor.key, object.id, [
          fv('label', `${object.name}${i}`),
          fv('company', companies[i % 5].id),
          fv(
            'partners',
            companies.slice(0, 1 + (i % 5)).map((c) => c.id),
          ),
        ]);
    const page = (objectId: number) =>
      queryRecords(editor.key, workspaceId, { filter: { field: 'objectId', op: 'eq', value: objectId }, limit: 50 });
    // Each read twice: the second finds the caller and the definitions in the isolate's memory.
    await page(deal.id);
    await page(plain.id);
    const [withLookups, without] = [await page(deal.id), await page(plain.id)];
    expect(withLookups.body.items).toHaveLength(12);
    for (const item of withLookups.body.items) expect(valuesOf(item)).toHaveProperty('companyTitle');
    expect(roundTrips(withLookups)).toBeLessThanOrEqual(roundTrips(without) + 1);
    const list = await call('GET', `/workspaces/${workspaceId}/records?objectId=${deal.id}`, { key: editor.key });
    const plainList = await call('GET', `/workspaces/${workspaceId}/records?objectId=${plain.id}`, { key: editor.key });
    expect(list.body.items.map((item: any) => valuesOf(item).companyTitle)).toEqual(
      Array.from({ length: 12 }, (_, i) => `C${i % 5}`),
    );
    expect(roundTrips(list)).toBeLessThanOrEqual(roundTrips(plainList) + 1);
  });

  it('are never written, filtered or sorted', async () => {
    const { editor, workspaceId, company, deal } = await setup();
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
    const write = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: deal.id, fieldValues: [fv('company', acme.id), fv('companyTitle', 'x')] }],
    });
    expect(write.status).toBe(422);
    expect(write.body.errors).toEqual([
      expect.objectContaining({ pointer: '/0/fieldValues/1', code: 'read_only_field' }),
    ]);
    const filtered = await queryRecords(editor.key, workspaceId, {
      filter: { field: 'companyTitle', op: 'eq', value: 'Acme' },
    });
    expect(filtered.status).toBe(422);
    expect(filtered.body.errors).toEqual([
      expect.objectContaining({ pointer: '/filter/field', code: 'not_filterable' }),
    ]);
    const sorted = await queryRecords(editor.key, workspaceId, { sort: [{ field: 'partnerSizes', direction: 'asc' }] });
    expect(sorted.status).toBe(422);
    expect(sorted.body.errors).toEqual([expect.objectContaining({ pointer: '/sort/0/field', code: 'not_filterable' })]);
    const listed = await call('GET', `/workspaces/${workspaceId}/records?field.companyTitle=Acme`, { key: editor.key });
    expect(listed.status).toBe(422);
    expect(listed.body.errors).toEqual([
      expect.objectContaining({ query: 'field.companyTitle', code: 'not_filterable' }),
    ]);
  });

  it('are refused by a definition unless they read a reference of the object to a field of its target', async () => {
    const { workspaceId, company } = await setup();
    const define = (fields: unknown[]) =>
      admin('POST', '/admin/objects', { name: 'Bad', workspaceIds: [workspaceId], fields });
    const base = [
      { name: 'label', type: 'text' },
      { name: 'company', type: 'reference', target: company.id },
    ];
    const wrong = await define([
      ...base,
      { name: 'a', type: 'lookup', reference: 'label', field: 'title' },
      { name: 'b', type: 'lookup', reference: 'company', field: 'missing' },
      { name: 'c', type: 'lookup', reference: 'nothing', field: 'title' },
    ]);
    expect(wrong.status).toBe(422);
    expect(wrong.body.errors.map((e: { pointer: string; code: string }) => [e.pointer, e.code])).toEqual([
      ['/fields/2/reference', 'invalid_lookup'],
      ['/fields/3/field', 'invalid_lookup'],
      ['/fields/4/reference', 'invalid_lookup'],
    ]);
    const shape = await define([...base, { name: 'a', type: 'lookup', reference: 'company', indexed: true }]);
    expect(shape.status).toBe(400);
    expect(shape.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([
      '/fields/2/field',
      '/fields/2/indexed',
    ]);
  });

  it('go with their reference field when a role hides it', async () => {
    const { deal } = await setup();
    const role = (fields: Record<string, string>) =>
      admin('POST', '/admin/roles', {
        name: `r ${Math.random()}`,
        objects: [{ objectId: deal.id, read: true, fields }],
      });
    const leaky = await role({ company: 'hidden' });
    expect(leaky.status).toBe(422);
    expect(leaky.body.errors).toEqual([expect.objectContaining({ pointer: '/objects/0/fields/company' })]);
    expect((await role({ company: 'hidden', companyTitle: 'hidden' })).status).toBe(201);
  });
});
