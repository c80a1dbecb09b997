import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import { createAsyncIterable, type UniversalServerRequest } from "@connectrpc/connect/protocol";
import type { NodeRequest } from "./http-body.js";
import type { NodeResponse } from "./rest-gateway.js";

/** The reason a call's signal aborts with once its client went away: one object, as it carries nothing of the call. */
const CLIENT_WENT_AWAY = new ConnectError("the client went away before the answer was sent", Code.Canceled);

/** The request's headers as Fetch `Headers`, without HTTP/2's pseudo-headers. */
function webHeaders(headers: NodeRequest["headers"]): Headers {
  const header = new Headers();
  for (const name in headers) {
    if (name.startsWith(":")) continue;
    const value = headers[name];
    if (typeof value === "string") header.append(name, value);
    else if (Array.isArray(value)) for (const item of value) header.append(name, item);
  }
  return header;
}

/**
 * The Connect handler's view of a request whose body was read whole
 * (`body`), as connect-node's `universalRequestFromNodeRequest` makes it,
 * except for its signal: that aborts, with a `canceled` error, only when the
 * response closes before the handler ended it, or the request fails. Over
 * HTTP/2 a response closes unended when the client resets the stream (with
 * any code, NO_ERROR included) or its connection goes, or the server ends an
 * idle session; over HTTP/1.1 when the client hangs up. connect-node's
 * signal aborts after every call too, without a reason, which makes the
 * runtime build a DOMException and its stack trace on every request: a
 * tenth of a publish's own cost. `controller`: the one whose signal the
 * request carries, for a caller that aborts it itself (the gRPC unary lane).
 */
export function universalRequest(
  req: NodeRequest,
  res: NodeResponse,
  body: Uint8Array,
  contextValues: ContextValues,
  controller = new AbortController(),
): UniversalServerRequest {
  const gone = () => {
    if (!controller.signal.aborted && !res.writableEnded) controller.abort(CLIENT_WENT_AWAY);
  };
  // Closed already (while the body was read): the call is over before it starts.
  if ("stream" in res ? res.stream.closed : res.destroyed) gone();
  else res.once("close", gone);
  req.once("error", (error) => {
    if (!controller.signal.aborted) controller.abort(new ConnectError("the request failed", Code.Canceled, undefined, undefined, error));
  });
  const authority = "authority" in req ? req.authority : req.headers.host;
  const encrypted = "encrypted" in req.socket && req.socket.encrypted === true;
  return {
    httpVersion: req.httpVersion,
    method: req.method ?? "",
    url: new URL(req.url ?? "", `${encrypted ? "https" : "http"}://${authority ?? "localhost"}`).toString(),
    header: webHeaders(req.headers),
    body: createAsyncIterable([body]),
    signal: controller.signal,
    contextValues,
  };
}
