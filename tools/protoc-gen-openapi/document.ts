import type { DescField, DescService } from "@bufbuild/protobuf";
import { type HttpBinding, readHttpBindings } from "../../src/api/transport/http-rules.js";
import { ERROR_RESPONSES, ERROR_SCHEMAS, errorResponsesFor } from "./connect-errors.js";
import { ComponentSchemas, commentOf, type JsonSchema, readableFromString, writtenAsObject } from "./json-schema.js";

export interface DocumentOptions {
  title: string;
  version: string;
  /** Services guarded by the admin token; every other one takes a client's API key. */
  adminServices: ReadonlySet<string>;
  /** info.license: an SPDX identifier, e.g. `MIT`; absent: none. */
  license?: string;
}

const SECURITY_SCHEMES = {
  apiKey: {
    type: "http",
    scheme: "bearer",
    description: "A client's API key: `Authorization: Bearer <key>`. Issued by `ClientService` (or `BOOTSTRAP_API_KEY`).",
  },
  adminToken: {
    type: "http",
    scheme: "bearer",
    description: "The service's `ADMIN_TOKEN`: `Authorization: Bearer <token>`. Without `ADMIN_TOKEN` set these operations answer 401.",
  },
};

/**
 * The OpenAPI 3.1 document of the REST mapping: one operation per
 * `google.api.http` binding, read with the gateway's own `readHttpBindings`
 * and described as the gateway serves it (see src/api/transport/rest-gateway.ts):
 * - path variables bind top-level request fields;
 * - with no `body`, every other request field comes from the query string;
 * - with `body: "*"` the JSON body is the request less the path fields, and
 *   with `body: "field"` it is that field; the query string is then ignored;
 * - `response_body` answers with that response field instead of the whole.
 */
export function buildDocument(services: readonly DescService[], options: DocumentOptions): JsonSchema {
  for (const name of options.adminServices) {
    if (!services.some((service) => service.typeName === name)) throw new Error(`admin_service=${name}: no such service among the inputs`);
  }
  const schemas = new ComponentSchemas();
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const operationIds = new Map<string, number>();
  const bindings = readHttpBindings(services);
  for (const binding of bindings) {
    // A streaming RPC (WatchDeliveries) has no REST path; one that declares one would not be served.
    if (binding.method.methodKind !== "unary") {
      throw new Error(
        `${binding.procedure}: a ${binding.method.methodKind} RPC cannot have a REST path: the REST gateway serves unary calls`,
      );
    }
    const service = binding.method.parent;
    const baseId = `${service.name}_${binding.method.name}`;
    const seen = operationIds.get(baseId) ?? 0;
    operationIds.set(baseId, seen + 1);
    const path = pathTemplate(binding);
    const operations = paths[path] ?? {};
    paths[path] = operations;
    const verb = binding.httpMethod.toLowerCase();
    if (operations[verb]) throw new Error(`${binding.procedure}: ${binding.httpMethod} ${path} is bound twice`);
    operations[verb] = {
      operationId: seen === 0 ? baseId : `${baseId}_${seen}`,
      tags: [service.name],
      summary: binding.method.name,
      ...describe(commentOf(binding.method)),
      ...(binding.method.deprecated ? { deprecated: true } : {}),
      security: [{ [options.adminServices.has(service.typeName) ? "adminToken" : "apiKey"]: [] }],
      ...operation(binding, schemas),
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: options.title,
      version: options.version,
      ...(options.license ? { license: { name: options.license, identifier: options.license } } : {}),
      description:
        "The REST mapping of the API, generated from `proto/` (its `google.api.http` rules) by tools/protoc-gen-openapi. " +
        "Every operation is also a Connect, gRPC and gRPC-Web RPC at `/<package>.<Service>/<Method>`. " +
        "Fields follow the proto3 JSON mapping: lowerCamelCase names, 64-bit integers as strings, enums by name, timestamps in RFC 3339. " +
        "Answers carry every field, zero values included. Errors are Connect errors.",
    },
    // The service serves this document itself: its operations are on the origin it came from.
    servers: [{ url: "/", description: "The service that serves this document (/openapi.json)" }],
    tags: services
      .filter((service) => bindings.some((binding) => binding.method.parent === service))
      .map((service) => ({ name: service.name, ...describe(commentOf(service)) })),
    paths,
    components: {
      schemas: { ...schemas.toObject(), ...ERROR_SCHEMAS },
      responses: ERROR_RESPONSES,
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

function describe(text: string | undefined): { description?: string } {
  return text === undefined ? {} : { description: text };
}

/** The OpenAPI path, variables by JSON name (`{subscription_id}` → `{subscriptionId}`); refuses what the gateway would match only literally. */
function pathTemplate(binding: HttpBinding): string {
  const segments = binding.segments.map((segment) => {
    if (typeof segment !== "string") return `{${pathField(binding, segment.field).jsonName}}`;
    if (/[{}*:]/.test(segment)) {
      throw new Error(
        `${binding.procedure}: path segment "${segment}" is not supported by the REST gateway (no wildcards, custom verbs or partial variables)`,
      );
    }
    return segment;
  });
  return `/${segments.join("/")}`;
}

function pathField(binding: HttpBinding, name: string): DescField {
  const field = binding.method.input.fields.find((each) => each.name === name);
  if (!field) {
    throw new Error(
      `${binding.procedure}: path variable {${name}} is not a field of ${binding.method.input.typeName} (the REST gateway binds top-level fields only)`,
    );
  }
  if (!readableFromString(field))
    throw new Error(`${binding.procedure}: path variable {${name}}: ${field.fieldKind} fields cannot be read from text`);
  return field;
}

function operation(binding: HttpBinding, schemas: ComponentSchemas): JsonSchema {
  const { input, output } = binding.method;
  const pathFields = new Set(
    binding.segments.flatMap((segment) => (typeof segment === "string" ? [] : [pathField(binding, segment.field)])),
  );
  const parameter = (field: DescField, where: "path" | "query") => {
    // The field's description goes on the parameter, where tools show it.
    const { description, ...schema } = schemas.field(field);
    return {
      name: field.jsonName,
      in: where,
      ...(where === "path" ? { required: true } : {}),
      ...(description ? { description } : {}),
      schema,
    };
  };
  const parameters = [...pathFields].map((field) => parameter(field, "path"));
  let body: JsonSchema | undefined;
  if (binding.body === "") {
    for (const field of input.fields) {
      if (pathFields.has(field)) continue;
      if (!readableFromString(field)) {
        throw new Error(
          `${binding.procedure}: ${input.typeName}.${field.name} (${field.fieldKind}) cannot come from the query string, where the REST gateway reads the fields of a rule without a body`,
        );
      }
      parameters.push(parameter(field, "query"));
    }
  } else if (binding.body === "*") {
    if (input.fields.some((field) => !pathFields.has(field)))
      body = pathFields.size === 0 ? schemas.message(input) : schemas.object(input, pathFields);
  } else {
    const field = input.fields.find((each) => each.name === binding.body);
    if (!field) throw new Error(`${binding.procedure}: body "${binding.body}" is not a field of ${input.typeName}`);
    if (!writtenAsObject(field))
      throw new Error(`${binding.procedure}: body "${binding.body}": the REST gateway accepts only a JSON object as the body`);
    body = schemas.field(field);
  }
  // The whole response message only when no response_body picks a field: otherwise its schema would go unused.
  let response: JsonSchema;
  if (binding.responseBody) {
    const field = output.fields.find((each) => each.name === binding.responseBody);
    if (!field) throw new Error(`${binding.procedure}: response_body "${binding.responseBody}" is not a field of ${output.typeName}`);
    response = schemas.field(field);
  } else response = schemas.message(output);
  return {
    ...(parameters.length > 0 ? { parameters } : {}),
    // Optional: the gateway reads an empty body as `{}`.
    ...(body ? { requestBody: { required: false, content: { "application/json": { schema: body } } } } : {}),
    responses: {
      "200": { description: "OK", content: { "application/json": { schema: response } } },
      ...errorResponsesFor({ hasBody: body !== undefined, hasPathParameters: pathFields.size > 0 }),
    },
  };
}
