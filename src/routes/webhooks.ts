import type { IRequest } from 'itty-router';
import type * as v from 'valibot';
import type { Context } from '../context.ts';
import { settle } from '../core/settle.ts';
import type { Caller } from '../domain/access.ts';
import { urlProblem } from '../domain/webhook.ts';
import { bearerToken, sha256Hex } from '../http/auth.ts';
import { readJson } from '../http/body.ts';
import { cursorKey, readCursor } from '../http/cursor.ts';
import { cursorGone, forbidden, invalidBody, notFound, unauthorized, unprocessable } from '../http/errors.ts';
import { pathIds } from '../http/params.ts';
import { json } from '../http/respond.ts';
import { parseObject } from '../schemas/parse.ts';
import { ReplayInput, WebhookInput, WebhookStatusInput, type WebhookSchema } from '../schemas/webhooks.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import { Webhooks, type Webhook } from '../storage/webhooks.ts';
import { newWebhookSecret } from '../push/sign.ts';
import { forgetSubscriptions } from '../push/wake.ts';

/**
 * Webhook subscriptions of a workspace, for its editors: a viewer is 403, anyone else 404, as
 * for the workspace's records. Order of checks: 401, a bad path id 400, not a member 404, not an
 * editor 403, a bad body 400/415/422, an unknown subscription 404.
 */

const publicOf = ({
  id,
  url,
  types,
  objectIds,
  createdAt,
  status,
  reason,
}: Webhook): v.InferOutput<typeof WebhookSchema> => ({
  id,
  url,
  types,
  objectIds,
  createdAt,
  status,
  reason,
});

const webhooksOf = (context: Context): Webhooks => new Webhooks(context.env.DB, context.meter);
const objectOf = (context: Context, id: number) => context.env.WEBHOOKS.getByName(String(id));

/** The caller, once proven an editor of the workspace; the body's problem (if any) only after that. */
async function editor<T>(
  request: IRequest,
  context: Context,
  body?: () => Promise<T>,
): Promise<{ caller: Caller; workspaceId: number; webhookId: number; body: T }> {
  const keyHash = await sha256Hex(bearerToken(request));
  const names = request.params.webhookId === undefined ? ['workspaceId'] : ['workspaceId', 'webhookId'];
  const ids = pathIds(request.params, ...names) as Record<string, number>;
  const parsed = await settle(async () => (body === undefined ? (undefined as T) : body()));
  const { caller } = await context.store.createContext(keyHash, []);
  if (caller === undefined) throw unauthorized();
  const workspaceId = ids.workspaceId as number;
  const role = caller.roles.get(workspaceId);
  if (role === undefined) throw notFound('Workspace');
  if (role !== 'editor') throw forbidden('Webhooks of a workspace are for its editors.');
  if (!parsed.ok) throw parsed.error;
  return { caller, workspaceId, webhookId: ids.webhookId ?? 0, body: parsed.value };
}

function bodyOf<S extends Parameters<typeof parseObject>[0]>(request: Request, schema: S) {
  return async (): Promise<v.InferOutput<S>> => {
    const parsed = parseObject(schema, await readJson(request));
    if (!parsed.ok) throw invalidBody(parsed.problems);
    return parsed.value;
  };
}

/** The subscription of the path, or 404. */
async function existing(context: Context, webhookId: number, workspaceId: number): Promise<Webhook> {
  const webhook = await webhooksOf(context).get(webhookId, workspaceId);
  if (webhook === undefined) throw notFound('Webhook');
  return webhook;
}

/** POST /workspaces/{workspaceId}/webhooks: delivery starts after the feed's newest change. */
export async function createWebhook(request: IRequest, context: Context): Promise<Response> {
  const { caller, workspaceId, body } = await editor(request, context, bodyOf(request, WebhookInput));
  const problem = urlProblem(body.url, context.env.WEBHOOK_ALLOW_HTTP);
  if (problem !== undefined) throw unprocessable([{ pointer: '/url', code: 'url_not_allowed', message: problem }]);
  const secret = newWebhookSecret();
  const webhook = await webhooksOf(context).create({
    workspaceId,
    url: body.url,
    types: body.types === undefined ? null : [...new Set(body.types)],
    objectIds: body.objectIds === undefined ? null : [...new Set(body.objectIds)].sort((a, b) => a - b),
    secret,
    now: Date.now(),
    by: caller.userId,
  });
  forgetSubscriptions(workspaceId);
  // Starts its alarms; should this call fail, the next write or the Cron Trigger wakes it.
  context.waitUntil(
    objectOf(context, webhook.id)
      .wake(webhook.id)
      .catch(() => {}),
  );
  return json({ ...publicOf(webhook), secret }, 201);
}

/** GET /workspaces/{workspaceId}/webhooks: oldest first, never a secret. */
export async function listWebhooks(request: IRequest, context: Context): Promise<Response> {
  const { workspaceId } = await editor(request, context);
  const items = (await webhooksOf(context).list(workspaceId)).map(publicOf);
  return json({ items });
}

/** DELETE /workspaces/{workspaceId}/webhooks/{webhookId}: nothing more is sent. */
export async function deleteWebhook(request: IRequest, context: Context): Promise<Response> {
  const { workspaceId, webhookId } = await editor(request, context);
  if (!(await webhooksOf(context).remove(webhookId, workspaceId))) throw notFound('Webhook');
  forgetSubscriptions(workspaceId);
  await objectOf(context, webhookId).forget();
  return new Response(null, { status: 204 });
}

/** PATCH /workspaces/{workspaceId}/webhooks/{webhookId}: pause (`disabled`) or resume (`active`) where it stopped. */
export async function updateWebhook(request: IRequest, context: Context): Promise<Response> {
  const { workspaceId, webhookId, body } = await editor(request, context, bodyOf(request, WebhookStatusInput));
  const reason = body.status === 'disabled' ? 'paused by an editor' : null;
  const webhook = await webhooksOf(context).setStatus(webhookId, workspaceId, body.status, reason);
  if (webhook === undefined) throw notFound('Webhook');
  forgetSubscriptions(workspaceId);
  if (body.status === 'active') await objectOf(context, webhookId).resume(webhookId);
  return json(publicOf(webhook));
}

/** POST /workspaces/{workspaceId}/webhooks/{webhookId}/replay: delivers again every matching change after `after`. */
export async function replayWebhook(request: IRequest, context: Context): Promise<Response> {
  const { workspaceId, webhookId, body } = await editor(request, context, bodyOf(request, ReplayInput));
  const webhook = await existing(context, webhookId, workspaceId);
  const secret = await cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
  const after = await settle(() => readCursor(secret, body.after, `changes/${workspaceId}`, 'after'));
  if (!after.ok)
    throw invalidBody([
      { pointer: '/after', code: 'invalid_cursor', message: 'not a cursor of this workspace’s change feed' },
    ]);
  const { horizon } = await webhooksOf(context).changes(workspaceId, Number.MAX_SAFE_INTEGER, 1);
  if (after.value < horizon)
    throw cursorGone({ pointer: '/after', code: 'gone', message: 'changes after this position are no longer kept' });
  await objectOf(context, webhookId).replay(webhookId, after.value);
  return json(publicOf(webhook));
}

/** GET /workspaces/{workspaceId}/webhooks/{webhookId}/deliveries: the last 100 attempts, newest first. */
export async function listDeliveries(request: IRequest, context: Context): Promise<Response> {
  const { workspaceId, webhookId } = await editor(request, context);
  await existing(context, webhookId, workspaceId);
  return json({ items: await objectOf(context, webhookId).deliveries() });
}
