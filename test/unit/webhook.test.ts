import { Webhook as Verifier } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  backoffMs,
  DEFAULT_TIMING,
  matches,
  shouldDisable,
  timingOf,
  urlProblem,
  workspacesOfAnswer,
  writesRecords,
} from '../../src/domain/webhook.ts';
import { newWebhookSecret, webhookHeaders } from '../../src/push/sign.ts';

const HOUR = 60 * 60 * 1000;

describe('webhook rules', () => {
  it('filters by type and object; null lets everything through', () => {
    const all = { types: null, objectIds: null };
    expect(matches(all, { type: 'deleted', objectId: 9 })).toBe(true);
    const some = { types: ['created', 'updated'] as const, objectIds: [1, 2] };
    expect(matches(some, { type: 'created', objectId: 2 })).toBe(true);
    expect(matches(some, { type: 'deleted', objectId: 2 })).toBe(false);
    expect(matches(some, { type: 'updated', objectId: 3 })).toBe(false);
  });

  it('backs off from 5 s, doubling, to at most 1 h; disables after 3 days of failing', () => {
    const waits = Array.from({ length: 14 }, (_, i) => backoffMs(i + 1, DEFAULT_TIMING));
    expect(waits.slice(0, 5)).toEqual([5_000, 10_000, 20_000, 40_000, 80_000]);
    expect(waits.at(-1)).toBe(HOUR);
    expect(Math.max(...waits)).toBe(HOUR);
    expect(backoffMs(10_000, DEFAULT_TIMING)).toBe(HOUR);
    expect(shouldDisable(0, 72 * HOUR - 1, DEFAULT_TIMING)).toBe(false);
    expect(shouldDisable(0, 72 * HOUR, DEFAULT_TIMING)).toBe(true);
  });

  it('a test build shortens the timing; anything but a positive integer keeps the defaults', () => {
    expect(timingOf('50', '2000')).toEqual({ retryBaseMs: 50, retryMaxMs: 36_000, disableAfterMs: 2000 });
    expect(timingOf(undefined, undefined)).toEqual(DEFAULT_TIMING);
    for (const bad of ['', '0', '-5', '1.5', 'soon', '05']) expect(timingOf(bad, bad)).toEqual(DEFAULT_TIMING);
  });

  it('URLs are https: unless their origin is listed for plain http:', () => {
    expect(urlProblem('https://hooks.example.com/x?y=1', undefined)).toBeUndefined();
    expect(urlProblem('http://hooks.example.com/x', undefined)).toBe('must be an https: URL');
    expect(urlProblem('http://127.0.0.1:8788/x', 'http://localhost:1, http://127.0.0.1:8788')).toBeUndefined();
    expect(urlProblem('http://127.0.0.1:8789/x', 'http://127.0.0.1:8788')).toBe('must be an https: URL');
    expect(urlProblem('ftp://hooks.example.com/', undefined)).toBe('must be an https: URL');
    expect(urlProblem('/relative', undefined)).toBe('not an absolute URL');
    expect(urlProblem('https://u:p@hooks.example.com/', undefined)).toBe('must not carry credentials');
  });

  it('a record write wakes the workspaces of the records it answered', () => {
    expect(writesRecords('POST', '/records/batch')).toBe(true);
    expect(writesRecords('PATCH', '/workspaces/1/records/2')).toBe(true);
    expect(writesRecords('POST', '/workspaces/1/records/2/restore')).toBe(true);
    expect(writesRecords('GET', '/workspaces/1/records')).toBe(false);
    expect(writesRecords('POST', '/workspaces/1/webhooks')).toBe(false);
    expect(writesRecords('POST', '/admin/users')).toBe(false);
    expect(workspacesOfAnswer({ id: 1, sharedWorkspaceIds: [3, 1] })).toEqual([1, 3]);
    expect(
      workspacesOfAnswer([{ record: { sharedWorkspaceIds: [2] } }, { record: { sharedWorkspaceIds: [2, 5] } }, {}]),
    ).toEqual([2, 5]);
    expect(workspacesOfAnswer(null)).toEqual([]);
  });
});

describe('Standard Webhooks signing', () => {
  it('signs so that the reference implementation verifies, and only the exact body', async () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const body = JSON.stringify({ cursor: 'MQ.abc', type: 'created', note: 'é ✓' });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = await webhookHeaders(secret, 'MQ.abc', timestamp, body);
    expect(headers['webhook-id']).toBe('MQ.abc');
    expect(headers['webhook-timestamp']).toBe(String(timestamp));
    expect(new Verifier(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Verifier(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Verifier(newWebhookSecret()).verify(body, headers)).toThrow();
  });
});
