import type { Context } from '../context.ts';
import { workspacesOfAnswer, writesRecords } from '../domain/webhook.ts';
import { Meter } from '../storage/meter.ts';
import { Webhooks } from '../storage/webhooks.ts';

/**
 * After a write's answer has left, wakes the active webhook subscriptions of the workspaces its
 * records are shared with. Best effort, off the answer's path and cost (its own meter): a lost
 * wake-up only delays delivery until the subscription's next catch-up alarm.
 */
export function wakeAfterWrite(request: Request, response: Response, context: Context): void {
  if (response.status < 200 || response.status >= 300) return;
  if (!writesRecords(request.method, new URL(request.url).pathname)) return;
  const answer = response.clone();
  context.waitUntil(
    (async () => {
      const workspaceIds = workspacesOfAnswer(await answer.json());
      const ids = await new Webhooks(context.env.DB, new Meter()).activeIn(workspaceIds);
      await Promise.all(ids.map((id) => context.env.WEBHOOKS.getByName(String(id)).wake(id)));
    })().catch((error: unknown) =>
      console.error(
        JSON.stringify({ message: 'webhook wake-up failed', requestId: context.requestId, error: String(error) }),
      ),
    ),
  );
}
