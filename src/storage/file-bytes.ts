/** Bytes read from a body at a time (at least a quarter of it each read, but its last). */
const CHUNK = 1024 * 1024;

/**
 * A file's bytes into R2 as they arrive: never held whole in memory. The body is read a megabyte
 * at a time (a few JavaScript turns a file, not one a network packet) and each piece is written
 * both into a stream of the declared length that R2 reads (a body shorter or longer fails) and
 * into a SHA-256 digest. Whatever fails, nothing is left in R2 under the key.
 */
export async function streamUpload(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream<Uint8Array>,
  length: number,
  httpMetadata: R2HTTPMetadata,
): Promise<string> {
  const digest = new crypto.DigestStream('SHA-256');
  const hashing = digest.getWriter();
  const fixed = new FixedLengthStream(length);
  const writing = fixed.writable.getWriter();
  const putting = bucket.put(key, fixed.readable, { httpMetadata }).then(
    () => undefined,
    (error: unknown) => error ?? new Error('put failed'),
  );
  try {
    const reader = body.getReader({ mode: 'byob' });
    // The next piece is read while the last one is written: the network and R2 both keep moving.
    let written: Promise<unknown> = Promise.resolve();
    for (let done = false; !done;) {
      const read = await reader.readAtLeast(CHUNK / 4, new Uint8Array(CHUNK));
      done = read.done;
      await written;
      const piece = read.value;
      if (piece !== undefined && piece.byteLength > 0) {
        written = Promise.all([writing.write(piece), hashing.write(piece)]);
        // Its failure is met when it is awaited, after the next read.
        written.catch(() => undefined);
      }
    }
    await written;
    await Promise.all([writing.close(), hashing.close()]);
    const failure = await putting;
    if (failure !== undefined) throw failure;
  } catch (error) {
    await writing.abort(error).catch(() => undefined);
    await hashing.abort(error).catch(() => undefined);
    await putting;
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
