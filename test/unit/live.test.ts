import { describe, expect, it } from 'vitest';
import { CLOSE, closeReason, sseClose, sseEvent } from '../../src/domain/live.ts';
import { parseLiveQuery } from '../../src/domain/list-query.ts';

describe('a live stream', () => {
  it('frames an item as one event whose id is its cursor, and the end as a close event', () => {
    expect(sseEvent('MQ.x', '{"type":"created"}')).toBe('id: MQ.x\ndata: {"type":"created"}\n\n');
    expect(sseClose(CLOSE.tooSlow, 'MQ.x')).toBe('event: close\ndata: {"code":4008,"reason":"MQ.x"}\n\n');
  });

  it('cuts a close reason to the 123 bytes a WebSocket allows, never inside a character', () => {
    expect(closeReason('a'.repeat(200))).toHaveLength(123);
    const cut = closeReason('é'.repeat(100));
    expect(new TextEncoder().encode(cut).byteLength).toBe(122);
    expect(cut).toBe('é'.repeat(61));
    expect(closeReason('MQ.short')).toBe('MQ.short');
  });

  it('starts from now on by default; takes `after` or `start`, never both, and a ticket; refuses anything else', () => {
    expect(parseLiveQuery(new URLSearchParams(''))).toEqual({ ok: true, value: { start: 'latest' } });
    expect(parseLiveQuery(new URLSearchParams('after=MQ.x&ticket=lt_y'))).toEqual({
      ok: true,
      value: { start: 'latest', after: 'MQ.x', ticket: 'lt_y' },
    });
    expect(parseLiveQuery(new URLSearchParams('start=oldest'))).toEqual({ ok: true, value: { start: 'oldest' } });
    const wrong = parseLiveQuery(new URLSearchParams('start=oldest&after=MQ.x&start=latest&limit=5'));
    expect(wrong.ok).toBe(false);
    if (!wrong.ok)
      expect(wrong.problems.map((p) => [p.query, p.code])).toEqual([
        ['start', 'duplicate'],
        ['limit', 'unknown_parameter'],
        ['start', 'invalid_value'],
      ]);
    const bad = parseLiveQuery(new URLSearchParams('start=newest'));
    expect(bad.ok === false && bad.problems.map((p) => p.code)).toEqual(['invalid_value']);
  });
});
