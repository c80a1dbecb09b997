import type { DescService } from "@bufbuild/protobuf";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { edgeContextValues, edgeFactsOf } from "./edge-facts.js";
import { discardBody, HttpError, type NodeRequest, type NodeResponse, readBody, writeError } from "./http-body.js";
import { type HttpBinding, matchPath, readHttpBindings } from "./http-rules.js";
import { parseJsonObject } from "./json-body.js";
import { bodyFields, queryFields, structFieldError } from "./rest-fields.js";

/** Headers a REST caller sends that the RPC should see. */
const FORWARDED_HEADERS = ["authorization", "user-agent", "x-request-id", "idempotency-key"];

/**
 * Serves the REST paths declared in the proto by turning each request into
 * the matching Connect unary JSON call on the same handlers, so auth,
 * validation, errors and logging are the RPC's own.
 */
export class RestGateway {
  readonly #bindings: HttpBinding[];
  readonly #handlers: Map<string, UniversalHandler>;

  constructor(
    services: readonly DescService[],
    handlers: readonly UniversalHandler[],
    private readonly maxBodyBytes: number,
  ) {
    this.#bindings = readHttpBindings(services);
    this.#handlers = new Map(handlers.map((handler) => [handler.requestPath, handler]));
  }

  /** Handles the request if a binding's path matches; false lets others try. */
  handle(req: NodeRequest, res: NodeResponse): boolean {
    const url = new URL(req.url ?? "/", "http://gateway");
    const segments = url.pathname.split("/").filter((s) => s !== "");
    let decoded: string[];
    try {
      decoded = segments.map(decodeURIComponent);
    } catch {
      return false;
    }
    const matches = this.#bindings.flatMap((binding) => {
      const variables = matchPath(binding, decoded);
      return variables ? [{ binding, variables }] : [];
    });
    if (matches.length === 0) return false;
    const match = matches.find(({ binding }) => binding.httpMethod === req.method);
    if (!match) {
      const allowed = [...new Set(matches.map(({ binding }) => binding.httpMethod))].sort().join(", ");
      writeError(res, new HttpError(405, "unimplemented", `${req.method} is not supported here; use ${allowed}`), { allow: allowed });
      return true;
    }
    this.#call(req, res, match.binding, match.variables, url.searchParams).catch((error: unknown) => {
      if (error instanceof HttpError) {
        writeError(res, error);
        if (error.status === 413) discardBody(req, this.maxBodyBytes);
      } else writeError(res, new HttpError(500, "internal", "internal error"));
    });
    return true;
  }

  async #call(req: NodeRequest, res: NodeResponse, binding: HttpBinding, variables: Record<string, string>, query: URLSearchParams) {
    const handler = this.#handlers.get(binding.procedure);
    if (!handler) throw new HttpError(501, "unimplemented", `${binding.procedure} is not served`);
    const message = await this.#requestMessage(req, binding, variables, query);
    const header = new Headers({ "content-type": "application/json", "connect-protocol-version": "1" });
    for (const name of FORWARDED_HEADERS) {
      const value = req.headers[name];
      if (typeof value === "string") header.set(name, value);
    }
    const abort = new AbortController();
    // Only a client gone before its answer aborts the call: every response closes, and an abort makes a DOMException.
    res.once("close", () => {
      if (!res.writableEnded) abort.abort();
    });
    const response = await handler({
      httpVersion: req.httpVersion,
      method: "POST",
      url: `http://gateway${binding.procedure}`,
      header,
      body: message as never,
      signal: abort.signal,
      contextValues: edgeContextValues(edgeFactsOf(req)),
    });
    const chunks: Uint8Array[] = [];
    for await (const chunk of response.body ?? []) chunks.push(chunk);
    let body = Buffer.concat(chunks);
    if (response.status === 200 && binding.responseBody) {
      const whole = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
      body = Buffer.from(JSON.stringify(whole[toJsonName(binding.responseBody)] ?? {}));
    }
    const retryAfter = response.header?.get("retry-after");
    res.writeHead(response.status, {
      "content-type": "application/json",
      "content-length": body.byteLength,
      ...(retryAfter ? { "retry-after": retryAfter } : {}),
    });
    res.end(body);
  }

  async #requestMessage(req: NodeRequest, binding: HttpBinding, variables: Record<string, string>, query: URLSearchParams) {
    let message: Record<string, unknown> = {};
    if (binding.body !== "") {
      const contentType = req.headers["content-type"] ?? "";
      const bytes = await readBody(req, this.maxBodyBytes);
      if (bytes.byteLength > 0 && !/^application\/json\b/i.test(contentType)) {
        throw new HttpError(415, "invalid_argument", "Content-Type must be application/json");
      }
      const encoding = req.headers["content-encoding"]?.trim().toLowerCase();
      if (bytes.byteLength > 0 && encoding && encoding !== "identity") {
        throw new HttpError(415, "invalid_argument", `Content-Encoding ${encoding} is not supported here: send the JSON body uncompressed`);
      }
      const json = parseJsonObject(bytes);
      message = binding.body === "*" ? bodyFields(binding.method.input, json) : { [binding.body]: json };
    } else {
      // Fields not bound to the path or body come from the query string.
      message = queryFields(binding.method.input, query);
    }
    const misplaced = structFieldError(binding.method.input, message);
    if (misplaced) throw new HttpError(400, "invalid_argument", misplaced);
    for (const [field, value] of Object.entries(variables)) {
      const existing = message[field] ?? message[toJsonName(field)];
      if (existing !== undefined && existing !== value) {
        throw new HttpError(400, "invalid_argument", `${field} in the body (${JSON.stringify(existing)}) contradicts the path (${value})`);
      }
      message[field] = value;
    }
    return message;
  }
}

function toJsonName(protoName: string): string {
  return protoName.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
}
