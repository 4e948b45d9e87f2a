/**
 * `cloudflare:workers` for the simulator, which runs the service's own modules in Node: the one
 * export they use, a Durable Object's base class, keeping its state and env as workerd's does.
 */
export class DurableObject<Env = unknown> {
  constructor(
    protected readonly ctx: DurableObjectState,
    protected readonly env: Env,
  ) {}
}
