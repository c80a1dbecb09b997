import type { ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";

type Json = { [key: string]: unknown };

export interface DocumentedOperation {
  method: string;
  /** The path as the document writes it, e.g. `/api/webhookSubscription/{id}`. */
  template: string;
  operation: Json;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * Finds the document's operation for a request and checks an answer against
 * the schema the document gives for its status, with a JSON Schema 2020-12
 * validator (the dialect of OpenAPI 3.1).
 */
export class OpenApiChecker {
  readonly operations: DocumentedOperation[];
  readonly #document: Json;
  readonly #ajv = new Ajv2020({
    allErrors: true,
    formats: {
      "date-time": (text: string) => RFC3339.test(text) && !Number.isNaN(Date.parse(text)),
      int32: { type: "number", validate: (value: number) => Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31 },
      int64: /^-?[0-9]+$/,
      uint64: /^[0-9]+$/,
      float: true,
      double: true,
    },
  });
  readonly #compiled = new Map<unknown, ValidateFunction>();

  constructor(document: Json) {
    // The components become one schema resource that response schemas refer into.
    const text = JSON.stringify(document).replaceAll('"#/components/schemas/', '"openapi.json#/$defs/');
    this.#document = JSON.parse(text) as Json;
    const components = this.#document.components as { schemas: Json };
    this.#ajv.addSchema({ $id: "openapi.json", $defs: components.schemas });
    this.operations = Object.entries(this.#document.paths as Record<string, Record<string, Json>>).flatMap(([template, item]) =>
      Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), template, operation })),
    );
  }

  /** The operation serving `method path`; concrete segments win over templated ones, as OpenAPI says. */
  find(method: string, path: string): DocumentedOperation | undefined {
    const segments =
      path
        .split("?", 1)[0]
        ?.split("/")
        .filter((segment) => segment !== "") ?? [];
    const candidates = this.operations.filter((each) => {
      const template = each.template.split("/").filter((segment) => segment !== "");
      return (
        each.method === method &&
        template.length === segments.length &&
        template.every((segment, index) => segment.startsWith("{") || segment === segments[index])
      );
    });
    const rank = (each: DocumentedOperation) => each.template.replace(/\{[^}]*\}/g, "\uffff");
    return candidates.sort((a, b) => rank(a).localeCompare(rank(b)))[0];
  }

  /**
   * Checks an answer: the status must be documented for the operation (by
   * its own entry, or `default` when `allowDefault`) and the body must
   * match its schema. Returns the problems; none means it conforms.
   */
  check(found: DocumentedOperation, status: number, body: unknown, allowDefault = false): string[] {
    const responses = found.operation.responses as Record<string, Json>;
    let response = responses[String(status)] ?? (allowDefault ? responses.default : undefined);
    if (!response) return [`${found.method} ${found.template}: status ${status} is not documented`];
    const ref = response.$ref;
    if (typeof ref === "string")
      response = (this.#document.components as Record<string, Record<string, Json>>).responses?.[ref.split("/").pop() ?? ""] ?? {};
    const schema = (response.content as Record<string, { schema: Json }> | undefined)?.["application/json"]?.schema;
    if (!schema) return [`${found.method} ${found.template}: status ${status} documents no JSON body`];
    let validate = this.#compiled.get(schema);
    if (!validate) {
      validate = this.#ajv.compile(schema);
      this.#compiled.set(schema, validate);
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).map(
      (error) => `${found.method} ${found.template} ${status}: ${error.instancePath || "/"} ${error.message}`,
    );
  }
}
