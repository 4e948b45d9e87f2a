import type { Env } from './env.ts';

/**
 * Tells the object's builder that builds may be due (after a definition's write committed). Apart
 * from the object's class, so the routes and the Cron Trigger do not load `cloudflare:workers`.
 */
export async function startIndexBuild(env: Env, objectId: number): Promise<void> {
  await env.INDEX_BUILDS.getByName(String(objectId)).start(objectId);
}
