import { describe, expect, it } from 'vitest';
import {
  canCreate,
  fieldLimits,
  recordAccess,
  visibleDef,
  type Caller,
  type DefinedRole,
  type ObjectRule,
} from '../../src/domain/access.ts';
import { patchProblems } from '../../src/domain/patch.ts';
import type { ObjectDef } from '../../src/domain/definition.ts';

const caller: Caller = {
  userId: 1,
  roles: new Map([
    [10, 'editor'],
    [20, 'viewer'],
  ]),
};
const at = (sharedWorkspaceIds: number[], objectId = 5, ownedBy: number | null = null) => ({
  objectId,
  ownedBy,
  sharedWorkspaceIds,
});
const rule = (objectId: number, over: Partial<ObjectRule> = {}): ObjectRule => ({
  objectId,
  read: true,
  create: false,
  update: false,
  delete: false,
  rows: 'all',
  fields: {},
  ...over,
});
const role = (...objects: ObjectRule[]): DefinedRole => ({ id: 99, objects });
const def: ObjectDef = {
  id: 5,
  version: 1,
  name: 'Deal',
  workspaceIds: [10, 20, 30],
  fields: [
    { name: 'title', type: 'text' },
    { name: 'salary', type: 'number' },
    { name: 'stage', type: 'text' },
  ],
};

describe('access rules', () => {
  it('derives read, update and delete from the best role among shared workspaces', () => {
    expect(recordAccess(caller, at([20, 10]))).toMatchObject({ read: true, update: true, delete: true });
    expect(recordAccess(caller, at([20, 30]))).toMatchObject({ read: true, update: false, delete: false });
    expect(recordAccess(caller, at([30])).read).toBe(false);
  });
  it('under a workspace path counts only that workspace, and only if shared with it', () => {
    expect(recordAccess(caller, at([10, 20]), 20)).toMatchObject({ read: true, update: false });
    expect(recordAccess(caller, at([20]), 10).read).toBe(false);
    expect(recordAccess(caller, at([10, 30]), 30).read).toBe(false);
  });
  it('creation needs a workspace of the object whose role creates', () => {
    const of = (workspaceIds: number[]): ObjectDef => ({ ...def, workspaceIds });
    expect(canCreate(caller, of([20, 10]))).toBe(true);
    expect(canCreate(caller, of([20]))).toBe(false);
    const creator: Caller = { userId: 1, roles: new Map([[30, role(rule(5, { create: true }))]]) };
    expect(canCreate(creator, of([30]))).toBe(true);
    expect(canCreate(creator, { ...of([30]), id: 6 })).toBe(false);
  });
});

describe('defined roles', () => {
  it('an object the role does not list is as missing; one it lists without read too', () => {
    const member: Caller = { userId: 1, roles: new Map([[30, role(rule(6), rule(7, { read: false }))]]) };
    expect(recordAccess(member, at([30], 5)).read).toBe(false);
    expect(recordAccess(member, at([30], 6)).read).toBe(true);
    expect(recordAccess(member, at([30], 7)).read).toBe(false);
  });
  it('own rows: only records the member owns', () => {
    const member: Caller = { userId: 1, roles: new Map([[30, role(rule(5, { rows: 'own', update: true }))]]) };
    expect(recordAccess(member, at([30], 5, 1))).toMatchObject({ read: true, update: true, delete: false });
    expect(recordAccess(member, at([30], 5, 2)).read).toBe(false);
    expect(recordAccess(member, at([30], 5, null)).read).toBe(false);
  });
  it('delete covers restore and is apart from update', () => {
    const member: Caller = { userId: 1, roles: new Map([[30, role(rule(5, { delete: true }))]]) };
    const access = recordAccess(member, at([30]));
    const problems = (action?: 'delete' | 'restore') =>
      patchProblems({ id: 1, deleted: false, ...at([30]) }, access, def, {}, '', action).map((p) => p.status);
    expect(problems()).toEqual([403]);
    expect(problems('delete')).toEqual([]);
    expect(problems('restore')).toEqual([]);
  });
  it('with several workspaces, the most open rule field by field', () => {
    const member: Caller = {
      userId: 1,
      roles: new Map([
        [30, role(rule(5, { update: true, fields: { salary: 'hidden', stage: 'read' } }))],
        [40, role(rule(5, { fields: { salary: 'read', stage: 'hidden', title: 'hidden' } }))],
      ]),
    };
    const both = recordAccess(member, at([30, 40]));
    expect([...both.fields.hidden]).toEqual([]);
    expect([...both.fields.readOnly].sort()).toEqual(['salary', 'stage']);
    expect(both.update).toBe(true);
    // Through a workspace's path, that workspace's rule alone.
    const through40 = recordAccess(member, at([30, 40]), 40);
    expect([...through40.fields.hidden].sort()).toEqual(['stage', 'title']);
    expect(through40.update).toBe(false);
    // A built-in role in one of them limits nothing.
    const withViewer: Caller = { userId: 1, roles: new Map([...member.roles, [20, 'viewer']]) };
    expect(fieldLimits(withViewer, 5, [30, 20]).hidden.size).toBe(0);
    // A role that reads but may not change opens no field to change: what the role that changes
    // makes read-only stays so.
    const viewerAndRole = recordAccess(withViewer, at([20, 30]));
    expect([viewerAndRole.update, [...viewerAndRole.fields.hidden], [...viewerAndRole.fields.readOnly].sort()]).toEqual(
      [true, [], ['salary', 'stage']],
    );
  });
  it('a hidden field is as one the object does not have; a read-only one is 403 at its value', () => {
    const member: Caller = {
      userId: 1,
      roles: new Map([[30, role(rule(5, { update: true, fields: { salary: 'hidden', stage: 'read' } }))]]),
    };
    const access = recordAccess(member, at([30]));
    expect(visibleDef(def, access.fields).fields.map((f) => f.name)).toEqual(['title', 'stage']);
    const record = { id: 1, deleted: false, ...at([30]) };
    const problems = (fieldName: string) =>
      patchProblems(record, access, def, { fieldValues: [{ fieldName, value: 1 }] }, '');
    const missing = patchProblems(
      record,
      recordAccess(caller, at([10])),
      def,
      {
        fieldValues: [{ fieldName: 'nothing', value: 1 }],
      },
      '',
    );
    expect(problems('salary').map(({ code, pointer }) => ({ code, pointer }))).toEqual(
      missing.map(({ code, pointer }) => ({ code, pointer })),
    );
    expect(problems('stage')).toContainEqual(
      expect.objectContaining({ status: 403, code: 'read_only_field', pointer: '/fieldValues/0' }),
    );
  });
});
