import type { Env } from '../env.ts';

/** Tells the object's index builder that builds may be due (after a definition's write committed). */
export async function startIndexBuild(env: Env, objectId: number): Promise<void> {
  await env.INDEX_BUILDS.getByName(String(objectId)).start(objectId);
}
