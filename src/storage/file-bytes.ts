/**
 * A file's bytes into R2 as they arrive: never held whole in memory. The body passes through a
 * stream of its declared length (R2 needs the length; a body shorter or longer fails) and, on the
 * way, a SHA-256 digest. Whatever fails, nothing is left in R2 under the key.
 */
export async function streamUpload(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream<Uint8Array>,
  length: number,
  httpMetadata: R2HTTPMetadata,
): Promise<string> {
  const digest = new crypto.DigestStream('SHA-256');
  const writer = digest.getWriter();
  const hashing = new TransformStream<Uint8Array, Uint8Array>({
    async transform(chunk, controller) {
      await writer.write(chunk);
      controller.enqueue(chunk);
    },
    async flush() {
      await writer.close();
    },
  });
  const fixed = new FixedLengthStream(length);
  const piping = body
    .pipeThrough(hashing)
    .pipeTo(fixed.writable)
    .then(
      () => undefined,
      (error: unknown) => error ?? new Error('upload stream failed'),
    );
  try {
    await bucket.put(key, fixed.readable, { httpMetadata });
    const failure = await piping;
    if (failure !== undefined) throw failure;
  } catch (error) {
    await piping;
    await writer.abort(error).catch(() => undefined);
    await bucket.delete(key).catch(() => undefined);
    throw new BodyCutShort();
  }
  return [...new Uint8Array(await digest.digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** The body ended before its Content-Length, or ran past it. */
export class BodyCutShort extends Error {}

/** Keys R2 deletes in one call at most. */
const DELETE_BATCH = 1000;

/** Removes up to a thousand of a tenant's files from R2 (all under `prefix`): whether more are left. */
export async function removeSomeFiles(bucket: R2Bucket, prefix: string): Promise<boolean> {
  const listed = await bucket.list({ prefix, limit: DELETE_BATCH });
  if (listed.objects.length > 0) await bucket.delete(listed.objects.map((object) => object.key));
  return listed.truncated;
}
