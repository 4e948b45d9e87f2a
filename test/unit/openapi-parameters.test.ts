import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/openapi.ts';
import { operations } from '../../src/routes/table.ts';

const doc = openApiDocument(operations) as any;

/** Every parameter of every operation, by where it is documented (a `$ref` read from the components). */
const parameters = Object.entries<any>(doc.paths).flatMap(([path, methods]) =>
  Object.entries<any>(methods).flatMap(([method, op]) =>
    (op.parameters ?? []).map((parameter: any) => ({
      where: `${method.toUpperCase()} ${path} ${parameter.$ref ?? parameter.name}`,
      parameter:
        parameter.$ref === undefined
          ? parameter
          : doc.components.parameters[String(parameter.$ref).split('/').at(-1) ?? ''],
    })),
  ),
);

describe('/openapi.json parameters', () => {
  it('say they are required exactly when they are (a path parameter always is, unsaid)', () => {
    expect(parameters.length).toBeGreaterThan(50);
    const disagreeing = parameters.flatMap(({ where, parameter }) => {
      const says = /\brequired\b/i.test(parameter.description ?? '');
      const is = parameter.required === true;
      const agrees = parameter.in === 'path' ? is && !says : says === is;
      // A default applies only to a parameter that may be left out.
      const defaulted = /\bdefault\b/i.test(parameter.description ?? '') && is;
      return agrees && !defaulted
        ? []
        : [`${where}: required ${String(parameter.required)}, "${parameter.description}"`];
    });
    expect(disagreeing).toEqual([]);
  });

  it('the object of an export and of an import is a required query parameter', () => {
    const objectIds = parameters.filter(({ where }) => /(export|imports) objectId$/.test(where));
    expect(objectIds.map(({ parameter }) => [parameter.in, parameter.required])).toEqual([
      ['query', true],
      ['query', true],
    ]);
  });
});
