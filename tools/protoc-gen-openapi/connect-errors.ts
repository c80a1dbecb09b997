import { Code } from "@connectrpc/connect";
// Connect's own names and code → status table (the protocol's), which the
// REST gateway passes on; marked internal, so @connectrpc/connect stays pinned.
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { JsonSchema } from "./json-schema.js";

const CODE_NAMES = Object.values(Code)
  .filter((code): code is Code => typeof code === "number")
  .map((code) => ({ code, name: codeToString(code) }));

/** The body of every error: the Connect error JSON, which the REST gateway also uses for its own refusals. */
export const ERROR_SCHEMAS: Record<string, JsonSchema> = {
  "connect.Error": {
    type: "object",
    description: "A Connect error. The HTTP status follows from `code`; clients should branch on `code`.",
    required: ["code"],
    properties: {
      code: { type: "string", enum: CODE_NAMES.map(({ name }) => name) },
      message: { type: "string", description: "For developers: what went wrong, in English." },
      details: { type: "array", items: { $ref: "#/components/schemas/connect.ErrorDetail" } },
    },
  },
  "connect.ErrorDetail": {
    type: "object",
    description: "A protobuf message carrying more about the error.",
    required: ["type", "value"],
    properties: {
      type: { type: "string", description: "The message's fully-qualified type name, e.g. `google.rpc.RetryInfo`." },
      value: { type: "string", contentEncoding: "base64", description: "The message's binary encoding, base64 without padding." },
      debug: { description: "The message as JSON, when the server adds it." },
    },
  },
};

const errorBody = { "application/json": { schema: { $ref: "#/components/schemas/connect.Error" } } };

function errorResponse(description: string, headers?: Record<string, unknown>): JsonSchema {
  return { description, ...(headers ? { headers } : {}), content: errorBody };
}

/** components.responses: the refusals every operation can meet, by the status the service answers with. */
export const ERROR_RESPONSES: Record<string, JsonSchema> = {
  BadRequest: errorResponse(
    "`invalid_argument`: malformed JSON, an unknown field, a wrong type, a body path field contradicting the path, or a value that fails validation.",
  ),
  Unauthenticated: errorResponse("`unauthenticated`: no `Authorization: Bearer …` header, or a credential that is not valid here."),
  NotFound: errorResponse("`not_found`: no such resource, or one that belongs to another client."),
  PayloadTooLarge: errorResponse("`resource_exhausted`: the body is larger than the service's `MAX_BODY_BYTES`."),
  UnsupportedMediaType: errorResponse("`invalid_argument`: a body whose `Content-Type` is not `application/json`."),
  TooManyRequests: errorResponse("`resource_exhausted`: over the caller's rate limit.", {
    "Retry-After": { description: "Seconds to wait before calling again.", schema: { type: "integer", minimum: 1 } },
  }),
  Internal: errorResponse("`internal`: an unexpected failure; details are in the service's log, not in the answer."),
  Error: errorResponse(
    `Any other Connect error. Its HTTP status follows from its code: ${CODE_NAMES.map(({ code, name }) => `\`${name}\` ${codeToHttpStatus(code)}`).join(", ")}.`,
  ),
};

/** The error responses of one operation. */
export function errorResponsesFor(operation: { hasBody: boolean; hasPathParameters: boolean }): Record<string, JsonSchema> {
  const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });
  return {
    "400": ref("BadRequest"),
    "401": ref("Unauthenticated"),
    ...(operation.hasPathParameters ? { "404": ref("NotFound") } : {}),
    ...(operation.hasBody ? { "413": ref("PayloadTooLarge"), "415": ref("UnsupportedMediaType") } : {}),
    "429": ref("TooManyRequests"),
    "500": ref("Internal"),
    default: ref("Error"),
  };
}
