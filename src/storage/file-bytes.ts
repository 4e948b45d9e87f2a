/**
 * A file's bytes into R2 as they arrive: never held whole in memory. The body passes through a
 * stream of its declared length (R2 needs the length; a body shorter or longer fails) and, beside
 * it, a SHA-256 digest. Whatever fails, nothing is left in R2 under the key.
 */
export async function streamUpload(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream<Uint8Array>,
  length: number,
  httpMetadata: R2HTTPMetadata,
): Promise<string> {
  // Two native branches, no JavaScript per chunk: one into R2 at the declared length, one into the digest.
  const [toFile, toDigest] = body.tee();
  const digest = new crypto.DigestStream('SHA-256');
  const settled = (stream: Promise<void>): Promise<unknown> =>
    stream.then(
      () => undefined,
      (error: unknown) => error ?? new Error('upload stream failed'),
    );
  const hashing = settled(toDigest.pipeTo(digest));
  const fixed = new FixedLengthStream(length);
  const piping = settled(toFile.pipeTo(fixed.writable));
  try {
    await bucket.put(key, fixed.readable, { httpMetadata });
    const failure = (await Promise.all([piping, hashing])).find((error) => error !== undefined);
    if (failure !== undefined) throw failure;
  } catch {
    await Promise.all([piping, hashing]);
    await bucket.delete(key).catch(() => undefined);
    throw new BodyCutShort();
  }
  return [...new Uint8Array(await digest.digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** The body ended before its Content-Length, or ran past it. */
export class BodyCutShort extends Error {}

/** One part of a multipart upload, streamed into R2 at its declared length. */
export async function streamPart(
  upload: R2MultipartUpload,
  partNumber: number,
  body: ReadableStream<Uint8Array>,
  length: number,
): Promise<R2UploadedPart> {
  const fixed = new FixedLengthStream(length);
  const piping = body.pipeTo(fixed.writable).then(
    () => undefined,
    (error: unknown) => error ?? new Error('part stream failed'),
  );
  try {
    const part = await upload.uploadPart(partNumber, fixed.readable);
    const failure = await piping;
    if (failure !== undefined) throw failure;
    return part;
  } catch {
    await piping;
    throw new BodyCutShort();
  }
}

/** The SHA-256 of an object in R2, read back as a stream (a file that went up in parts had none taken). */
export async function sha256Of(bucket: R2Bucket, key: string): Promise<string> {
  const object = await bucket.get(key);
  if (object === null) throw new Error(`no object ${key}`);
  const digest = new crypto.DigestStream('SHA-256');
  await object.body.pipeTo(digest);
  return [...new Uint8Array(await digest.digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** Keys R2 deletes in one call at most. */
const DELETE_BATCH = 1000;

/** Removes up to a thousand of a tenant's files from R2 (all under `prefix`): whether more are left. */
export async function removeSomeFiles(bucket: R2Bucket, prefix: string): Promise<boolean> {
  const listed = await bucket.list({ prefix, limit: DELETE_BATCH });
  if (listed.objects.length > 0) await bucket.delete(listed.objects.map((object) => object.key));
  return listed.truncated;
}
