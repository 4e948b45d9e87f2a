import { Ajv2020 } from 'ajv/dist/2020.js';

/**
 * A third-party validator (Ajv, JSON Schema 2020-12) placed in front of the service: every
 * answer must be documented by /openapi.json for its operation and status, body included.
 */
export class OpenApiCheck {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly failures: string[] = [];

  constructor(private readonly doc: any) {
    this.ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
  }

  /** Records a failure when `answer` is not what the document promises for `method path`. */
  check(method: string, path: string, status: number, contentType: string | null, body: unknown): void {
    const template = Object.keys(this.doc.paths).find((t) =>
      new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}$`).test(path),
    );
    const op = template && this.doc.paths[template][method.toLowerCase()];
    // A request for no documented operation (unknown path, other method) is the validator's own
    // to refuse, as OpenAPI validators do; our 404/405 answers to those are tested elsewhere.
    if (op === undefined) return;
    const response = op.responses?.[String(status)];
    const where = `${method} ${path} → ${status}`;
    if (response === undefined) return void this.failures.push(`${where}: status not documented`);
    const media = response.content && Object.keys(response.content)[0];
    if (media === undefined) {
      if (body !== undefined) this.failures.push(`${where}: undocumented body`);
      return;
    }
    if (!contentType?.startsWith(media))
      this.failures.push(`${where}: content type ${contentType}, documented ${media}`);
    const schema = JSON.parse(
      JSON.stringify(response.content[media].schema).replaceAll('"#/components', '"doc#/components'),
    );
    const validate = this.ajv.compile(schema);
    if (!validate(body)) this.failures.push(`${where}: ${this.ajv.errorsText(validate.errors)}`);
  }

  get problems(): readonly string[] {
    return this.failures;
  }
}
