import { Code, ConnectError } from "@connectrpc/connect";
import { createAsyncIterable, type UniversalHandler, type UniversalServerRequest } from "@connectrpc/connect/protocol";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { edgeContextValues, edgeFactsOf } from "./edge-facts.js";
import { withSpecGrpcMessage } from "./grpc-message.js";
import { asConnectUnary, asGrpcResponse } from "./grpc-unary-as-connect.js";
import { discardBody, HttpError, type NodeRequest, type NodeResponse, readBody, writeError } from "./http-body.js";
import { isGrpcRequest, malformedMessage, withEmptyMessage } from "./request-message.js";

export interface ConnectAdapterOptions {
  maxBodyBytes: number;
  /** Answers requests for paths no handler serves. */
  fallback: (req: NodeRequest, res: NodeResponse) => void;
}

/**
 * Serves Connect, gRPC and gRPC-Web from the router's handlers, as
 * `connectNodeAdapter` does, except that the request body is read here, whole
 * (every API RPC takes one message), before a handler sees it: a body over the limit is
 * refused while the rest of it is read and thrown away (`discardBody`), so
 * the client reads the refusal instead of a reset (streams of requests,
 * which only server reflection takes, are read as they come); a binary message that
 * does not parse, or a JSON one that fails the REST gateway's JSON check, is
 * refused as invalid_argument (`malformedMessage`) before any interceptor,
 * auth included, runs. A binary gRPC unary call (the publish RPC, mostly) is
 * served as the equivalent Connect unary call on the same handler
 * (`asConnectUnary`), which costs a third of connect-es's gRPC pipeline.
 */
export function createConnectAdapter(
  handlers: readonly UniversalHandler[],
  options: ConnectAdapterOptions,
): (req: NodeRequest, res: NodeResponse) => void {
  const byPath = new Map(handlers.map((handler) => [handler.requestPath, handler]));
  return (req, res) => {
    const handler = byPath.get((req.url ?? "").split("?", 1)[0] ?? "");
    if (!handler) {
      options.fallback(req, res);
      return;
    }
    // The handler answers every error of the call itself; what fails here is
    // reading from or writing to a client that went away.
    serve(handler, req, res, options.maxBodyBytes).catch(() => {
      try {
        if (res.headersSent) res.destroy();
        else writeError(res, new HttpError(500, "internal", "internal error"));
      } catch {
        res.destroy(); // the answer cannot be written at all
      }
    });
  };
}

async function serve(handler: UniversalHandler, req: NodeRequest, res: NodeResponse, maxBodyBytes: number): Promise<void> {
  const facts = edgeFactsOf(req);
  if (handler.method.methodKind === "bidi_streaming" || handler.method.methodKind === "client_streaming") {
    // A stream of requests (server reflection) is read as it comes: its client waits for each answer before
    // asking again. The router limits each message to maxBodyBytes.
    await universalResponseToNodeResponse(
      withSpecGrpcMessage(await handler(universalRequestFromNodeRequest(req, res as never, undefined, edgeContextValues(facts)))),
      res as never,
    );
    return;
  }
  let body: Uint8Array;
  try {
    body = await readBody(req, maxBodyBytes);
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    discardBody(req, maxBodyBytes);
    if (!isGrpcRequest(req.headers["content-type"])) {
      writeError(res, error);
      return;
    }
    // gRPC clients read the outcome from the trailers, not the HTTP status.
    facts.refusal ??= new ConnectError(error.message, Code.ResourceExhausted);
    body = new Uint8Array(0);
  }
  let request: UniversalServerRequest = {
    ...universalRequestFromNodeRequest(req, res as never, undefined, edgeContextValues(facts)),
    body: createAsyncIterable([body]),
  };
  if (!facts.refusal) {
    const malformed = await malformedMessage(handler.method.input, request, body, maxBodyBytes);
    if (malformed) facts.refusal = new ConnectError(malformed, Code.InvalidArgument);
  }
  if (facts.refusal) request = withEmptyMessage(request);
  const unary = facts.refusal ? undefined : asConnectUnary(handler.method, request, body);
  const response = unary ? await asGrpcResponse(await handler(unary)) : await handler(request);
  await universalResponseToNodeResponse(withSpecGrpcMessage(response), res as never);
}
