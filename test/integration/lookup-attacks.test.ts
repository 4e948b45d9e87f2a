import { describe, expect, it } from 'vitest';
import {
  admin,
  call,
  createOne,
  download,
  fv,
  heldFile,
  newUser,
  newWorkspace,
  queryRecords,
  uploadFile,
  bytesOf,
  valuesOf,
  roundTrips,
} from './helpers.ts';
import { movingTenant } from './moving.ts';

/**
 * Attacks on lookup fields: readers who may see less of the records a lookup reads, definitions
 * changed under a lookup, values of every type, pages made large by what lookups read, and every
 * place a record leaves the service (none may carry a lookup).
 */

const COMPANY_FIELDS = [
  { name: 'title', type: 'text' },
  { name: 'size', type: 'integer' },
];

async function setup(companyFields: unknown[] = COMPANY_FIELDS) {
  const editor = await newUser('editor');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const object = async (definition: Record<string, unknown>) => {
    const made = await admin('POST', '/admin/objects', { workspaceIds: [workspaceId], ...definition });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body;
  };
  const company = await object({ name: 'Company', fields: companyFields });
  const base = [
    { name: 'label', type: 'text' },
    { name: 'company', type: 'reference', target: company.id, onDelete: 'keep' },
    { name: 'partners', type: 'reference', target: company.id, multiple: true, onDelete: 'keep' },
  ];
  const lookups = [
    { name: 'companyTitle', type: 'lookup', reference: 'company', field: 'title' },
    { name: 'partnerTitles', type: 'lookup', reference: 'partners', field: 'title' },
  ];
  const deal = await object({ name: 'Deal', nameTemplate: '{label}', fields: [...base, ...lookups] });
  const member = async (objects: unknown[]) => {
    const user = await newUser('member');
    const role = await admin('POST', '/admin/roles', { name: `role ${Math.random()}`, objects });
    expect(role.status, JSON.stringify(role.body)).toBe(201);
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${user.id}`, { roleId: role.body.id });
    return user;
  };
  const putCompany = (fields: unknown[]) =>
    admin('PUT', `/admin/objects/${company.id}`, { name: 'Company', workspaceIds: [workspaceId], fields });
  return { editor, workspaceId, company, deal, base, lookups, member, putCompany };
}

describe('lookup fields under a reader who may see less', () => {
  it('show only the referenced records a reader of their own rows owns, in every read', async () => {
    const { editor, workspaceId, company, deal, member } = await setup();
    const owner = await member([
      { objectId: deal.id, read: true },
      { objectId: company.id, read: true, create: true, rows: 'own' },
    ]);
    const mine = await createOne(owner.key, company.id, [fv('title', 'Mine')]);
    const theirs = await createOne(editor.key, company.id, [fv('title', 'Theirs')]);
    const made = await createOne(editor.key, deal.id, [
      fv('label', 'd'),
      fv('company', theirs.id),
      fv('partners', [theirs.id, mine.id]),
    ]);
    const expected = { label: 'd', company: theirs.id, partners: [theirs.id, mine.id], partnerTitles: ['Mine'] };
    const read = await call('GET', `/records/${made.id}`, { key: owner.key });
    expect(valuesOf(read.body)).toEqual(expected);
    const list = await call('GET', `/workspaces/${workspaceId}/records?objectId=${deal.id}`, { key: owner.key });
    expect(list.body.items.map(valuesOf)).toEqual([expected]);
    const query = await queryRecords(owner.key, workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: deal.id },
      fields: ['companyTitle', 'partnerTitles'],
    });
    expect(query.status).toBe(200);
    expect(query.body.items.map(valuesOf)).toEqual([{ partnerTitles: ['Mine'] }]);
  });

  it('leave a lookup hidden from its reader out of every read, its reference shown', async () => {
    const { editor, workspaceId, company, deal, member } = await setup();
    const reader = await member([
      { objectId: deal.id, read: true, fields: { companyTitle: 'hidden', partnerTitles: 'hidden' } },
      { objectId: company.id, read: true },
    ]);
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
    const made = await createOne(editor.key, deal.id, [
      fv('label', 'd'),
      fv('company', acme.id),
      fv('partners', [acme.id]),
    ]);
    const reads = [
      await call('GET', `/records/${made.id}`, { key: reader.key }),
      await call('GET', `/workspaces/${workspaceId}/records/${made.id}`, { key: reader.key }),
      await call('GET', `/workspaces/${workspaceId}/records?objectId=${deal.id}&expand=company`, { key: reader.key }),
      await queryRecords(reader.key, workspaceId, {
        filter: { field: 'objectId', op: 'eq', value: deal.id },
        expand: ['company'],
      }),
    ];
    for (const read of reads) {
      expect(read.status).toBe(200);
      expect(JSON.stringify(read.body)).not.toMatch(/companyTitle|partnerTitles/);
    }
    const projected = await queryRecords(reader.key, workspaceId, { fields: ['companyTitle'] });
    const missing = await queryRecords(reader.key, workspaceId, { fields: ['noSuchField'] });
    expect(projected.status).toBe(missing.status);
  });

  it('show a referenced record only where a read of that record answers it', async () => {
    const { editor, workspaceId, company, deal } = await setup();
    const viewer = await newUser('viewer');
    await admin('PUT', `/admin/workspaces/${workspaceId}/members/${viewer.id}`, { role: 'viewer' });
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
    const made = await createOne(editor.key, deal.id, [fv('label', 'd'), fv('company', acme.id)]);
    // The company object leaves the workspace; its records stay shared with it.
    const elsewhere = await newWorkspace();
    const moved = await admin('PUT', `/admin/objects/${company.id}`, {
      name: 'Company',
      workspaceIds: [elsewhere],
      fields: [
        { name: 'title', type: 'text' },
        { name: 'size', type: 'integer' },
      ],
    });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    const target = await call('GET', `/records/${acme.id}`, { key: viewer.key });
    const read = await call('GET', `/records/${made.id}`, { key: viewer.key });
    expect(read.status).toBe(200);
    expect(valuesOf(read.body).companyTitle).toBe(target.status === 200 ? 'Acme' : undefined);
  });

  it('name no field hidden from their reader in the definitions that reader is shown', async () => {
    const { workspaceId, company, deal, member } = await setup();
    const reader = await member([
      { objectId: deal.id, read: true },
      { objectId: company.id, read: true, fields: { title: 'hidden' } },
    ]);
    const objects = await call('GET', `/workspaces/${workspaceId}/objects`, { key: reader.key });
    expect(objects.status).toBe(200);
    type Field = { name: string; type: string; target?: number; reference?: string; field?: string };
    type Def = { id: number; fields: Field[] };
    const defs = new Map<number, Def>(objects.body.items.map((def: Def) => [def.id, def]));
    expect(defs.get(company.id)?.fields.map((f) => f.name)).toEqual(['size']);
    // Each lookup shown reads a field its reader is shown on the target: none reveals the hidden title.
    const shown = defs.get(deal.id)?.fields.filter((f) => f.type === 'lookup') ?? [];
    for (const lookup of shown) {
      const reference = defs.get(deal.id)?.fields.find((f: { name: string }) => f.name === lookup.reference);
      const target = defs.get(reference?.target ?? -1);
      expect(
        target?.fields.map((f: { name: string }) => f.name),
        lookup.name,
      ).toContain(lookup.field);
    }
  });

  it('answer a filter naming a lookup the reader cannot see as one naming a field that does not exist', async () => {
    const { editor, workspaceId, company, deal, member } = await setup();
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
    await createOne(editor.key, deal.id, [fv('label', 'd'), fv('company', acme.id)]);
    const blind = await member([
      { objectId: deal.id, read: true, fields: { company: 'hidden', companyTitle: 'hidden' } },
      { objectId: company.id, read: true },
    ]);
    const unlisted = await member([{ objectId: company.id, read: true }]);
    for (const reader of [blind, unlisted]) {
      const list = (field: string) =>
        call('GET', `/workspaces/${workspaceId}/records?field.${field}=Acme`, { key: reader.key });
      const [named, missing] = [await list('companyTitle'), await list('noSuchField')];
      expect({ status: named.status, body: named.body }).toEqual({
        status: missing.status,
        body: JSON.parse(JSON.stringify(missing.body).replaceAll('noSuchField', 'companyTitle')),
      });
      const query = (field: string) =>
        queryRecords(reader.key, workspaceId, { filter: { field, op: 'eq', value: 'Acme' } });
      const [q, qMissing] = [await query('companyTitle'), await query('noSuchField')];
      expect({ status: q.status, body: q.body }).toEqual({ status: qMissing.status, body: qMissing.body });
    }
  });

  it('are refused at the lookup when a role hides the reference field it would read', async () => {
    const { workspaceId, base, lookups } = await setup();
    const deal = await admin('POST', '/admin/objects', { name: 'Deal', workspaceIds: [workspaceId], fields: base });
    const role = await admin('POST', '/admin/roles', {
      name: `r ${Math.random()}`,
      objects: [{ objectId: deal.body.id, read: true, fields: { company: 'hidden' } }],
    });
    expect(role.status, JSON.stringify(role.body)).toBe(201);
    const changed = await admin('PUT', `/admin/objects/${deal.body.id}`, {
      name: 'Deal',
      workspaceIds: [workspaceId],
      nameTemplate: '{label}',
      fields: [...base, lookups[0]],
    });
    expect(changed.status).toBe(422);
    // The pointer names what the lookup has: its reference (a lookup has no expression).
    expect(changed.body.errors).toEqual([expect.objectContaining({ pointer: '/fields/3/reference' })]);
  });
});

describe('lookup fields and ids from elsewhere', () => {
  it('read nothing of another tenant, nor of an id that names no record', async () => {
    const { editor, workspaceId, deal } = await setup();
    const other = await movingTenant('DB', 'Other');
    const foreign = await createOne(other.key, other.companyObjectId, [fv('title', 'Foreign')]);
    const made = await createOne(editor.key, deal.id, [fv('label', 'd')]);
    for (const value of [foreign.id, foreign.id + 1_000_000]) {
      const single = await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: deal.id, fieldValues: [fv('company', value)] }],
      });
      expect(single.status).toBe(422);
      const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${made.id}`, {
        key: editor.key,
        body: { fieldValues: [fv('partners', [value])] },
      });
      expect(patched.status).toBe(422);
    }
    const read = await call('GET', `/records/${made.id}`, { key: editor.key });
    expect(JSON.stringify(read.body)).not.toContain('Foreign');
  });
});

describe('lookup fields when a definition changes under them', () => {
  it('show nothing of a field taken out of the referenced object, as that record shows nothing of it', async () => {
    const { editor, company, deal, putCompany } = await setup();
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme'), fv('size', 3)]);
    const made = await createOne(editor.key, deal.id, [fv('label', 'd'), fv('company', acme.id)]);
    expect((await putCompany([{ name: 'size', type: 'integer' }])).status).toBe(200);
    const target = await call('GET', `/records/${acme.id}`, { key: editor.key });
    const read = await call('GET', `/records/${made.id}`, { key: editor.key });
    expect(read.status).toBe(200);
    // What the lookup shows is what its record shows under that name.
    expect(valuesOf(read.body).companyTitle).toEqual(valuesOf(target.body).title);
  });

  /** A company whose text title became a lookup of its parent's label, and a deal reading that title. */
  async function titleBecameLookup() {
    const { editor, workspaceId, company, deal, putCompany } = await setup();
    const parent = await admin('POST', '/admin/objects', {
      name: 'Parent',
      workspaceIds: [workspaceId],
      fields: [{ name: 'label', type: 'text' }],
    });
    const acme = await createOne(editor.key, company.id, [fv('title', 'Old Acme')]);
    const made = await createOne(editor.key, deal.id, [fv('label', 'd'), fv('company', acme.id)]);
    const changed = await putCompany([
      { name: 'parent', type: 'reference', target: parent.body.id },
      { name: 'title', type: 'lookup', reference: 'parent', field: 'label' },
    ]);
    // Refusing to turn a field into a lookup is an answer too.
    if (changed.status === 422) return undefined;
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    return { editor, workspaceId, company, deal, acme, made, parent: parent.body };
  }

  it('never show the value stored under a field before it became a lookup', async () => {
    const changed = await titleBecameLookup();
    if (changed === undefined) return;
    const { editor, workspaceId, company, acme } = changed;
    // The lookup's reference holds nothing: it has no value, whatever the record once stored under its name.
    const read = await call('GET', `/records/${acme.id}`, { key: editor.key });
    expect(read.status).toBe(200);
    expect(valuesOf(read.body)).not.toHaveProperty('title');
    const list = await call('GET', `/workspaces/${workspaceId}/records?objectId=${company.id}`, { key: editor.key });
    expect(list.body.items.map(valuesOf)).toEqual([{}]);
  });

  it('read no lookup through a field of the referenced object that became one', async () => {
    const changed = await titleBecameLookup();
    if (changed === undefined) return;
    const { editor, workspaceId, acme, made, parent } = changed;
    const read = await call('GET', `/records/${made.id}`, { key: editor.key });
    expect(read.status).toBe(200);
    // Not the company's stored text of before, which no read of the company shows.
    expect(valuesOf(read.body).companyTitle).not.toBe('Old Acme');
    const p = await createOne(editor.key, parent.id, [fv('label', 'Parent label')]);
    await call('PATCH', `/workspaces/${workspaceId}/records/${acme.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('parent', p.id)] },
    });
    const target = await call('GET', `/records/${acme.id}`, { key: editor.key });
    expect(valuesOf(target.body).title).toBe('Parent label');
    const again = await call('GET', `/records/${made.id}`, { key: editor.key });
    expect(valuesOf(again.body).companyTitle).not.toBe('Old Acme');
  });

  it('never write, export or send the value stored under a field before it became a lookup', async () => {
    const changed = await titleBecameLookup();
    if (changed === undefined) return;
    const { editor, workspaceId, company, acme, parent } = changed;
    const exported = await download(editor.key, `/workspaces/${workspaceId}/records/export?objectId=${company.id}`);
    expect(exported.status).toBe(200);
    expect.soft(await exported.text()).not.toContain('Old Acme');
    const p = await createOne(editor.key, parent.id, [fv('label', 'Parent label')]);
    const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${acme.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('parent', p.id)] },
    });
    expect(patched.status).toBe(200);
    expect.soft(JSON.stringify(patched.body)).not.toContain('Old Acme');
    const feed = await call('GET', `/workspaces/${workspaceId}/changes?limit=100`, { key: editor.key });
    const last = feed.body.items.filter((item: { recordId: number }) => item.recordId === acme.id).at(-1);
    expect(last.version).toBe(patched.body.version);
    expect.soft(JSON.stringify(last)).not.toContain('Old Acme');
  });

  it('read their own object through a reference to it', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const made = await admin('POST', '/admin/objects', {
      name: 'Person',
      workspaceIds: [workspaceId],
      fields: [{ name: 'title', type: 'text' }],
    });
    const fields = [
      { name: 'title', type: 'text' },
      { name: 'manager', type: 'reference', target: made.body.id },
      { name: 'managerTitle', type: 'lookup', reference: 'manager', field: 'title' },
    ];
    const put = await admin('PUT', `/admin/objects/${made.body.id}`, {
      name: 'Person',
      workspaceIds: [workspaceId],
      fields,
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const boss = await createOne(editor.key, made.body.id, [fv('title', 'Boss')]);
    const worker = await createOne(editor.key, made.body.id, [fv('title', 'Worker'), fv('manager', boss.id)]);
    const self = await call('PATCH', `/workspaces/${workspaceId}/records/${boss.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('manager', boss.id)] },
    });
    expect(self.status).toBe(200);
    const [w, b] = [
      await call('GET', `/records/${worker.id}`, { key: editor.key }),
      await call('GET', `/records/${boss.id}`, { key: editor.key }),
    ];
    expect(valuesOf(w.body).managerTitle).toBe('Boss');
    expect(valuesOf(b.body).managerTitle).toBe('Boss');
    // A lookup of itself is refused: it would read a lookup.
    const loop = await admin('PUT', `/admin/objects/${made.body.id}`, {
      name: 'Person',
      workspaceIds: [workspaceId],
      fields: [...fields, { name: 'loop', type: 'lookup', reference: 'manager', field: 'loop' }],
    });
    expect(loop.status).toBe(422);
  });

  it('give a name template naming one its value, or are refused there', async () => {
    const { editor, workspaceId, company, base, lookups } = await setup();
    const made = await admin('POST', '/admin/objects', {
      name: 'Named',
      workspaceIds: [workspaceId],
      nameTemplate: '{companyTitle} deal',
      fields: [...base, ...lookups],
    });
    // Refused at the template (a name cannot hold another record's value), or rendered with it.
    if (made.status !== 201) {
      expect(made.status).toBe(400);
      expect(made.body.errors).toEqual([expect.objectContaining({ pointer: '/nameTemplate', code: 'not_allowed' })]);
      return;
    }
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
    const record = await createOne(editor.key, made.body.id, [fv('company', acme.id)]);
    const read = await call('GET', `/records/${record.id}`, { key: editor.key });
    expect(read.body.name).toBe('Acme deal');
  });
});

describe('lookup fields of every type', () => {
  it('show the value the referenced record shows, whatever its type', async () => {
    const companyFields = [
      { name: 'title', type: 'text' },
      { name: 'meta', type: 'json' },
      { name: 'tags', type: 'multiSelect', options: ['a', 'b'] },
      { name: 'active', type: 'boolean' },
      { name: 'amount', type: 'number' },
      { name: 'day', type: 'date' },
      { name: 'docs', type: 'file', multiple: true },
    ];
    const { editor, workspaceId, company, base } = await setup(companyFields);
    const sibling = await admin('PUT', `/admin/objects/${company.id}`, {
      name: 'Company',
      workspaceIds: [workspaceId],
      fields: [...companyFields, { name: 'twin', type: 'reference', target: company.id }],
    });
    expect(sibling.status, JSON.stringify(sibling.body)).toBe(200);
    const file = await uploadFile(editor.key, workspaceId, 'a.bin', bytesOf(10));
    expect(file.status).toBe(201);
    const other = await createOne(editor.key, company.id, [fv('title', 'Other')]);
    const values = [
      fv('title', 'quote " back\\slash \u2028 \u{1F600} <b> \u0000 end'),
      fv('meta', { a: [1, { b: null }], s: '"x"', tiny: 5e-324, big: 1.7976931348623157e308, n: 123456789.12345679 }),
      fv('tags', ['b', 'a']),
      fv('active', false),
      fv('amount', 0.30000000000000004),
      fv('day', '2024-02-29'),
      fv('docs', [heldFile(file.body)]),
      fv('twin', other.id),
    ];
    const acme = await createOne(editor.key, company.id, values);
    const names = ['title', 'meta', 'tags', 'active', 'amount', 'day', 'docs', 'twin'];
    const deal = await admin('POST', '/admin/objects', {
      name: 'Deal',
      workspaceIds: [workspaceId],
      fields: [
        ...base,
        ...names.map((name) => ({ name: `one_${name}`, type: 'lookup', reference: 'company', field: name })),
        ...names.map((name) => ({ name: `many_${name}`, type: 'lookup', reference: 'partners', field: name })),
      ],
    });
    expect(deal.status, JSON.stringify(deal.body)).toBe(201);
    const made = await createOne(editor.key, deal.body.id, [
      fv('company', acme.id),
      fv('partners', [acme.id, other.id]),
    ]);
    const target = valuesOf((await call('GET', `/records/${acme.id}`, { key: editor.key })).body);
    const read = valuesOf((await call('GET', `/records/${made.id}`, { key: editor.key })).body);
    for (const name of names) {
      expect(read[`one_${name}`], name).toEqual(target[name]);
      expect(read[`many_${name}`], name).toEqual(name === 'title' ? [target.title, 'Other'] : [target[name]]);
    }
  });
});

describe('lookup fields on a page', () => {
  it('keep a page within 4 MiB', async () => {
    const { editor, workspaceId, company, deal } = await setup();
    // 100,000 euro signs: 300 KB of UTF-8 each.
    const big = [];
    for (let i = 0; i < 5; i++) big.push(await createOne(editor.key, company.id, [fv('title', '€'.repeat(100_000))]));
    const ids = big.map((record) => record.id);
    const body = Array.from({ length: 10 }, (_, i) => ({
      objectId: deal.id,
      fieldValues: [fv('label', `d${i}`), fv('partners', ids)],
    }));
    expect((await call('POST', '/records/batch', { key: editor.key, body })).status).toBe(201);
    const list = await download(editor.key, `/workspaces/${workspaceId}/records?objectId=${deal.id}&limit=100`);
    expect(list.status).toBe(200);
    const bytes = (await list.arrayBuffer()).byteLength;
    expect(bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
    const query = await call('POST', `/workspaces/${workspaceId}/records/query`, {
      key: editor.key,
      body: { filter: { field: 'objectId', op: 'eq', value: deal.id }, limit: 100 },
    });
    expect(query.status).toBe(200);
    expect(new TextEncoder().encode(JSON.stringify(query.body)).byteLength).toBeLessThanOrEqual(4 * 1024 * 1024);
  });

  it('cost a page of 100 one more D1 round trip at most, with expand too', async () => {
    const { editor, workspaceId, company, deal, base } = await setup();
    const plain = await admin('POST', '/admin/objects', { name: 'Plain', workspaceIds: [workspaceId], fields: base });
    const companies: { id: number }[] = [];
    for (let i = 0; i < 3; i++) companies.push(await createOne(editor.key, company.id, [fv('title', `C${i}`)]));
    for (const objectId of [deal.id, plain.body.id])
      for (let chunk = 0; chunk < 5; chunk++) {
        const body = Array.from({ length: 20 }, (_, i) => ({
          objectId,
          fieldValues: [
            fv('label', `r${i}`),
            fv('company', (companies[i % 3] as { id: number }).id),
            fv('partners', [(companies[(i + chunk) % 3] as { id: number }).id]),
          ],
        }));
        expect((await call('POST', '/records/batch', { key: editor.key, body })).status).toBe(201);
      }
    const list = (objectId: number, extra = '') =>
      call('GET', `/workspaces/${workspaceId}/records?objectId=${objectId}&limit=100${extra}`, { key: editor.key });
    const query = (objectId: number, extra = {}) =>
      queryRecords(editor.key, workspaceId, {
        filter: { field: 'objectId', op: 'eq', value: objectId },
        limit: 100,
        ...extra,
      });
    for (const [name, read] of [
      ['list', (id: number) => list(id)],
      ['list expanded', (id: number) => list(id, '&expand=company,partners')],
      ['query', (id: number) => query(id)],
      ['query expanded', (id: number) => query(id, { expand: ['company', 'partners'] })],
    ] as const) {
      await read(deal.id);
      await read(plain.body.id);
      const [withLookups, without] = [await read(deal.id), await read(plain.body.id)];
      expect(withLookups.body.items, name).toHaveLength(100);
      expect(
        withLookups.body.items.every(
          (item: { fieldValues: { fieldName: string; value: unknown }[] }) => valuesOf(item).companyTitle !== undefined,
        ),
        name,
      ).toBe(true);
      expect(roundTrips(withLookups), name).toBeLessThanOrEqual(roundTrips(without) + 1);
    }
  });

  it('answer a projection naming a lookup, and refuse expanding one as a field that is no reference', async () => {
    const { editor, workspaceId, company, deal } = await setup();
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
    const made = await createOne(editor.key, deal.id, [fv('label', 'd'), fv('company', acme.id)]);
    const projected = await queryRecords(editor.key, workspaceId, {
      filter: { field: 'objectId', op: 'eq', value: deal.id },
      fields: ['companyTitle'],
    });
    expect(projected.status).toBe(200);
    expect(projected.body.items.map(valuesOf)).toEqual([{ companyTitle: 'Acme' }]);
    const expanded = await queryRecords(editor.key, workspaceId, { expand: ['companyTitle'] });
    expect(expanded.status).toBe(400);
    const one = await call('GET', `/records/${made.id}?expand=companyTitle`, { key: editor.key });
    expect(one.status).toBe(400);
    const list = await call('GET', `/workspaces/${workspaceId}/records?expand=companyTitle`, { key: editor.key });
    expect(list.status).toBe(400);
  });
});

describe('lookup fields outside reads', () => {
  it('never reach the feed, history or an export', async () => {
    const { editor, workspaceId, company, deal } = await setup();
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
    const made = await createOne(editor.key, deal.id, [fv('label', 'd'), fv('company', acme.id)]);
    await call('PATCH', `/workspaces/${workspaceId}/records/${made.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('label', 'e')] },
    });
    const feed = await call('GET', `/workspaces/${workspaceId}/changes?limit=100`, { key: editor.key });
    expect(feed.status).toBe(200);
    expect(JSON.stringify(feed.body)).not.toContain('companyTitle');
    const history = await call('GET', `/records/${made.id}/history`, { key: editor.key });
    expect(history.status).toBe(200);
    expect(JSON.stringify(history.body)).not.toContain('companyTitle');
    for (const format of ['csv', 'ndjson']) {
      const res = await download(
        editor.key,
        `/workspaces/${workspaceId}/records/export?objectId=${deal.id}&format=${format}`,
      );
      expect(res.status).toBe(200);
      expect(await res.text()).not.toContain('companyTitle');
    }
  });
});
