/**
 * What the Worker and its objects receive: the bindings, vars and secrets of wrangler.toml as
 * `wrangler types` generates them into `worker-configuration.d.ts` (`npm run types` writes it,
 * `npm test` fails when it is stale; the secrets' names come from `.dev.vars.example`). What
 * each var means is said beside it in wrangler.toml. Vars and secrets may be unset (a secret
 * never put, a var left out, a binding absent in a test build), so they are optional here. The
 * generated type names the record objects' class through a global declaration, not an import:
 * no module imports the object's code to know its environment.
 */
type Bound = 'DB' | 'RECORDS' | 'WEBHOOKS' | 'INDEX_BUILDS' | 'IMPORTS' | 'IMPORT_FILES' | 'FILES' | 'TENANTS' | 'LIVE';
export type Env = Pick<GeneratedEnv, Bound> &
  Partial<Omit<GeneratedEnv, Bound>> & {
    /** `off` turns the limiter off: only the chaos build and the benchmark set it. */
    RATE_LIMITS?: string;
    /** Test builds only: the first webhook retry's wait and the failing time before disabling, in ms. */
    WEBHOOK_RETRY_BASE_MS?: string;
    WEBHOOK_DISABLE_AFTER_MS?: string;
    /**
     * Test builds only: how long an isolate believes a tenant's route, in ms (30 s), and so how long a
     * move waits after its switch.
     */
    ROUTE_TTL_MS?: string;
  };
