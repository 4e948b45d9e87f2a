import { describe, expect, it } from 'vitest';
import { CallMemory, jsonBytes, PENDING_BYTES } from '../../src/write/call-memory.ts';

const MiB = 1024 * 1024;
const answer = (bytes: number) => ({ body: 'x'.repeat(bytes / 2 - 11) }); // {"body":"…"}, 2 bytes a unit
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('the calls an object remembers are bounded in bytes, not only in count', () => {
  it('keeps the newest answers within the byte bound, forgetting the oldest', async () => {
    let now = 0;
    const memory = new CallMemory<{ body: string }>(60_000, 10_000, 4 * MiB, jsonBytes, () => now);
    for (let i = 0; i < 10; i++) memory.set(`c${i}`, Promise.resolve(answer(MiB)));
    await settle();
    expect(memory.bytes).toBeLessThanOrEqual(4 * MiB);
    expect(memory.size).toBe(4);
    expect(memory.get('c0')).toBeUndefined();
    expect(await memory.get('c9')).toEqual(answer(MiB));
    now = 60_000;
    expect(memory.get('c9')).toBeUndefined();
  });

  it('never keeps an answer larger than the bound, and counts one still running at a small fixed size', async () => {
    const memory = new CallMemory<{ body: string }>(60_000, 10_000, 4 * MiB, jsonBytes, () => 0);
    let finish: (value: { body: string }) => void = () => undefined;
    memory.set('running', new Promise((resolve) => (finish = resolve)));
    expect(memory.bytes).toBe(PENDING_BYTES);
    memory.set('huge', Promise.resolve(answer(5 * MiB)));
    await settle();
    expect(memory.get('huge')).toBeUndefined();
    finish(answer(MiB));
    await settle();
    expect(memory.bytes).toBe(MiB);
    expect(memory.get('running')).toBeDefined();
  });

  it('still bounds the count, and forgets a call that failed', async () => {
    const memory = new CallMemory<number>(60_000, 3, 4 * MiB, jsonBytes, () => 0);
    for (let i = 0; i < 5; i++) memory.set(`c${i}`, Promise.resolve(i));
    memory.set('failed', Promise.reject(new Error('lost')));
    await settle();
    expect(memory.size).toBe(2);
    expect(memory.get('failed')).toBeUndefined();
    expect(await memory.get('c4')).toBe(4);
  });
});
