import { DurableObject } from 'cloudflare:workers';
import type { Env } from './env.ts';

/** One object per record: serializes that record's patches (filled in by the patch issue). */
export class RecordObject extends DurableObject<Env> {}
