import { Code, ConnectError, type ContextValues, createContextKey, createContextValues, type Interceptor } from "@connectrpc/connect";
import type { NodeRequest } from "./http-body.js";
import { remoteAddress } from "./listener.js";
import { requestIdOf } from "./request-id.js";

/** What the edge learned of a request, from the connection and the raw HTTP, for the interceptors. */
export interface EdgeFacts {
  /** The peer address of the TCP connection; no header is trusted for it. */
  sourceAddress?: string;
  /**
   * Why the request is refused before any of its work, auth included. The
   * edge cannot answer itself: only the protocol handler knows how to say it
   * in Connect, gRPC or gRPC-Web, so the call goes on to the first interceptor.
   */
  refusal?: ConnectError;
  /** See request-id.ts. */
  requestId?: string;
}

const edgeKey = createContextKey<EdgeFacts>({}, { description: "what the edge learned of the request" });

/** What the raw request says before any handler reads it. */
export function edgeFactsOf(req: NodeRequest): EdgeFacts {
  const sourceAddress = remoteAddress(req);
  const requestId = requestIdOf(req);
  const facts: EdgeFacts = {
    ...(sourceAddress === undefined ? {} : { sourceAddress }),
    ...(requestId === undefined ? {} : { requestId }),
  };
  // Node keeps the first of duplicate Authorization headers and drops the
  // rest; which one a proxy in front of us would pick is anyone's guess.
  const authorizations = countHeader(req.rawHeaders, "authorization");
  if (authorizations > 1) {
    facts.refusal = new ConnectError(`the request carries ${authorizations} Authorization headers; send exactly one`, Code.InvalidArgument);
  }
  return facts;
}

function countHeader(rawHeaders: readonly string[], name: string): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]?.toLowerCase() === name) count++;
  return count;
}

export function edgeContextValues(facts: EdgeFacts): ContextValues {
  return createContextValues().set(edgeKey, facts);
}

export function edgeFacts(values: ContextValues): EdgeFacts {
  return values.get(edgeKey);
}

/** Throws the edge's refusal, if any, before anything else of the call runs. */
export function createEdgeRefusalInterceptor(): Interceptor {
  return (next) => async (req) => {
    const { refusal } = edgeFacts(req.contextValues);
    if (refusal) throw refusal;
    return next(req);
  };
}
