import type { D1Migration } from 'cloudflare:test';
import type { Env as ServiceEnv } from '../src/env.ts';
import type * as ServiceModule from '../src/index.ts';

declare global {
  namespace Cloudflare {
    interface Env extends ServiceEnv {
      TEST_MIGRATIONS: D1Migration[];
      TEST_TIGHT_LIMITER: RateLimit;
      /** The fuzz suite's seed and number of requests, when set (else its fixed defaults). */
      FUZZ_SEED: string;
      FUZZ_RUNS: string;
      /** The webhook receiver of the tests (test/webhook-receiver.ts), e.g. http://127.0.0.1:40123. */
      WEBHOOK_RECEIVER: string;
    }
    interface GlobalProps {
      mainModule: typeof ServiceModule;
      durableNamespaces: 'RecordObject' | 'WebhookObject';
    }
  }
}
