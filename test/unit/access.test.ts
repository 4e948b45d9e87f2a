import { describe, expect, it } from 'vitest';
import { canCreate, recordAccess, type Caller } from '../../src/domain/access.ts';

const caller: Caller = {
  userId: 1,
  roles: new Map([
    [10, 'editor'],
    [20, 'viewer'],
  ]),
};

describe('access rules', () => {
  it('derives read/write from the best role among shared workspaces', () => {
    expect(recordAccess(caller, [20, 10])).toBe('write');
    expect(recordAccess(caller, [20, 30])).toBe('read');
    expect(recordAccess(caller, [30])).toBe('none');
  });
  it('under a workspace path counts only that workspace, and only if shared with it', () => {
    expect(recordAccess(caller, [10, 20], 20)).toBe('read');
    expect(recordAccess(caller, [20], 10)).toBe('none');
    expect(recordAccess(caller, [10, 30], 30)).toBe('none');
  });
  it('creation needs editor in a workspace of the object', () => {
    const def = (workspaceIds: number[]) => ({ id: 1, version: 1, name: 'o', workspaceIds, fields: [] });
    expect(canCreate(caller, def([20, 10]))).toBe(true);
    expect(canCreate(caller, def([20]))).toBe(false);
  });
});
