import type { ObjectDef } from './definition.ts';

export type Role = 'editor' | 'viewer';

/** The authenticated user and their role in each workspace they belong to. */
export interface Caller {
  userId: number;
  roles: ReadonlyMap<number, Role>;
}

/** Creating needs role editor in at least one workspace of the object. */
export function canCreate(caller: Caller, def: ObjectDef): boolean {
  return def.workspaceIds.some((id) => caller.roles.get(id) === 'editor');
}

export type Access = 'none' | 'read' | 'write';

/**
 * What the caller may do with a record shared with `shared`. Under a workspace path only that
 * workspace counts, and only if the record is shared with it.
 */
export function recordAccess(caller: Caller, shared: readonly number[], workspaceId?: number): Access {
  const workspaces = workspaceId === undefined ? shared : shared.includes(workspaceId) ? [workspaceId] : [];
  const roles = workspaces.map((id) => caller.roles.get(id));
  if (roles.includes('editor')) return 'write';
  return roles.includes('viewer') ? 'read' : 'none';
}
