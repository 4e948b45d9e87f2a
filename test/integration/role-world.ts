import { expect } from 'vitest';
import { admin, call, createOne, fv, newUser, newWorkspace, type Answer } from './helpers.ts';

/**
 * A workspace where a member holds a defined role beside an editor (the owner): Deals they read,
 * create, change and delete when they own them, whose `salary` and `link` are hidden from them and
 * whose `stage` they may only read; Accounts they may read; Secrets their role does not list.
 */
export async function roleWorld() {
  const owner = await newUser('owner');
  const member = await newUser('member');
  const workspaceId = await newWorkspace({ [owner.id]: 'editor' });
  const object = async (definition: Record<string, unknown>) => {
    const made = await admin('POST', '/admin/objects', { workspaceIds: [workspaceId], ...definition });
    if (made.status !== 201) throw new Error(`object: ${JSON.stringify(made.body)}`);
    return made.body;
  };
  const account = await object({ name: 'Account', nameTemplate: '{label}', fields: [{ name: 'label', type: 'text' }] });
  const deal = await object({
    name: 'Deal',
    nameTemplate: '{title}',
    fields: [
      { name: 'title', type: 'text', required: true },
      { name: 'salary', type: 'integer', unique: true },
      { name: 'stage', type: 'select', options: ['lead', 'won'] },
      { name: 'link', type: 'reference', target: account.id },
      { name: 'note', type: 'text' },
      { name: 'code', type: 'text', unique: true },
      { name: 'scan', type: 'file' },
    ],
  });
  const secret = await object({
    name: 'Secret',
    fields: [
      { name: 'code', type: 'text' },
      { name: 'papers', type: 'file' },
    ],
  });
  const note = await object({ name: 'Note', fields: [{ name: 'deal', type: 'reference', target: deal.id }] });
  const role = await admin('POST', '/admin/roles', {
    name: `sales ${Math.random()}`,
    objects: [
      {
        objectId: deal.id,
        read: true,
        create: true,
        update: true,
        delete: true,
        rows: 'own',
        fields: { salary: 'hidden', link: 'hidden', stage: 'read', scan: 'hidden' },
      },
      { objectId: account.id, read: true },
      { objectId: note.id, read: true, create: true },
    ],
  });
  if (role.status !== 201) throw new Error(`role: ${JSON.stringify(role.body)}`);
  const put = await admin('PUT', `/admin/workspaces/${workspaceId}/members/${member.id}`, { roleId: role.body.id });
  expect(put.body).toEqual({ workspaceId, userId: member.id, roleId: role.body.id });
  const accountRecord = await createOne(owner.key, account.id, [fv('label', 'Acme')]);
  const ownersDeal = await createOne(owner.key, deal.id, [
    fv('title', 'Big'),
    fv('salary', 900),
    fv('stage', 'lead'),
    fv('link', accountRecord.id),
  ]);
  const secretRecord = await createOne(owner.key, secret.id, [fv('code', 'x')]);
  const made = await call('POST', '/records/batch', {
    key: member.key,
    body: [{ objectId: deal.id, fieldValues: [fv('title', 'Mine'), fv('note', 'n')] }],
  });
  expect(made.status).toBe(201);
  const mine = made.body[0].record;
  // The owner gives the member's deal a salary, a stage and a link: what the member must not see or change.
  const patched = await call('PATCH', `/workspaces/${workspaceId}/records/${mine.id}`, {
    key: owner.key,
    body: { fieldValues: [fv('salary', 5), fv('stage', 'won'), fv('link', accountRecord.id)] },
  });
  expect(patched.status).toBe(200);
  return {
    owner,
    member,
    workspaceId,
    deal,
    account,
    secret,
    note,
    role: role.body,
    accountRecord,
    ownersDeal,
    secretRecord,
    mine: patched.body,
  };
}

export type RoleWorld = Awaited<ReturnType<typeof roleWorld>>;

/** Two answers alike in status and body, once the name or id each was asked about is set aside. */
export function same(a: Answer, b: Answer, names: [string | number, string | number]): void {
  const text = (answer: Answer, name: string | number) =>
    JSON.stringify({ status: answer.status, body: answer.body }).replaceAll(String(name), '<asked>');
  expect(text(a, names[0])).toEqual(text(b, names[1]));
}
