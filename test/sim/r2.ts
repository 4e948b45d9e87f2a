/// <reference types="node" />
import { createHash } from 'node:crypto';
import { concatBytes } from '../../src/core/bytes.ts';
import type { Env } from '../../src/env.ts';
import type { World } from './world.ts';

/**
 * R2 for the simulator: a bucket in memory, reached over the world's clock (each call a hop of a
 * few virtual milliseconds), whose reads and deletes may fail before they run. Only what the
 * service uses: `put` of a stream or bytes, `get` of a whole file or a byte range, `delete`.
 */
export class MemoryBucket {
  readonly files = new Map<string, Uint8Array>();
  /** Calls failed on purpose, for the report. */
  failed = 0;

  constructor(
    private readonly world: World,
    /** The chance that a read or delete fails before it runs, asked at each call. */
    private readonly failure: () => number,
  ) {}

  binding(): Env['IMPORT_FILES'] {
    return this as unknown as Env['IMPORT_FILES'];
  }

  private async hop(faulty: boolean): Promise<void> {
    await this.world.sleep(this.world.between(1, 4));
    if (faulty && this.world.chance(this.failure())) {
      this.failed++;
      throw Object.assign(new Error('R2: network connection lost (simulated)'), { retryable: true });
    }
  }

  async put(key: string, value: ReadableStream<Uint8Array> | ArrayBuffer | Uint8Array | string): Promise<object> {
    await this.hop(false);
    const bytes =
      typeof value === 'string'
        ? new TextEncoder().encode(value)
        : value instanceof Uint8Array
          ? value.slice()
          : value instanceof ArrayBuffer
            ? new Uint8Array(value.slice(0))
            : await readAll(value);
    this.files.set(key, bytes);
    return { key, size: bytes.byteLength };
  }

  async get(
    key: string,
    options?: { range?: { offset?: number; length?: number } },
  ): Promise<{ key: string; size: number; arrayBuffer(): Promise<ArrayBuffer> } | null> {
    await this.hop(true);
    const file = this.files.get(key);
    if (file === undefined) return null;
    const offset = options?.range?.offset ?? 0;
    const end = Math.min(file.byteLength, offset + (options?.range?.length ?? file.byteLength));
    if (offset > file.byteLength) throw new Error(`R2: range ${offset} past the end of ${key} (${file.byteLength})`);
    const part = file.slice(offset, end);
    return { key, size: file.byteLength, arrayBuffer: () => Promise.resolve(part.buffer) };
  }

  async delete(keys: string | string[]): Promise<void> {
    await this.hop(true);
    for (const key of Array.isArray(keys) ? keys : [keys]) this.files.delete(key);
  }
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  const reader = stream.getReader();
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    chunks.push(next.value);
  }
  return concatBytes(chunks);
}

/**
 * The two workerd streams the import route uses that Node lacks, installed while a run is: a
 * `crypto.DigestStream` (SHA-256 of what is written to it) and a `FixedLengthStream` (passes
 * bytes through, and errors when they are more or fewer than announced). Call after the world
 * installs its crypto; returns what puts things back.
 */
export function installWorkerdStreams(): () => void {
  class DigestStream extends WritableStream<Uint8Array> {
    readonly digest: Promise<ArrayBuffer>;
    constructor(_algorithm: string) {
      const hash = createHash('sha256');
      let settle: (digest: ArrayBuffer) => void = () => undefined;
      const digest = new Promise<ArrayBuffer>((resolve) => (settle = resolve));
      super({
        write: (chunk) => void hash.update(chunk),
        close: () => settle(new Uint8Array(hash.digest()).buffer),
      });
      this.digest = digest;
    }
  }
  class FixedLengthStream extends TransformStream<Uint8Array, Uint8Array> {
    constructor(length: number) {
      let seen = 0;
      super({
        transform: (chunk, controller) => {
          seen += chunk.byteLength;
          if (seen > length) throw new TypeError('FixedLengthStream: more bytes than its length');
          controller.enqueue(chunk);
        },
        flush: () => {
          if (seen !== length) throw new TypeError('FixedLengthStream: fewer bytes than its length');
        },
      });
    }
  }
  const global = globalThis as unknown as Record<string, unknown>;
  const crypto = global.crypto as Record<string, unknown>;
  crypto.DigestStream = DigestStream;
  global.FixedLengthStream = FixedLengthStream;
  return () => {
    delete crypto.DigestStream;
    delete global.FixedLengthStream;
  };
}
