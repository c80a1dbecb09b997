import { type DescMessage, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ConnectRouterOptions,
  createConnectRouter,
  createContextValues,
  createMethodImplSpec,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  createLinkedAbortController,
  createMethodUrl,
  encodeEnvelope,
  invokeUnaryImplementation,
  type UniversalServerRequest,
  validateUniversalHandlerOptions,
} from "@connectrpc/connect/protocol";
import { contentTypeProto, grpcStatusOk, parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { COMPRESSED_FLAG, singleUncompressedMessage } from "./binary-message.js";
import { reencode } from "./grpc-message.js";
import type { NodeResponse } from "./rest-gateway.js";

/** A unary method's implementation, the interceptors around it and the options it is served with, as the router holds them. */
export interface UnaryMethod {
  spec: Extract<MethodImplSpec, { kind: "unary" }>;
  interceptors: Interceptor[];
  acceptCompression: Compression[];
  compressMinBytes: number;
  readMaxBytes: number;
  maxTimeoutMs: number;
}

/** The binary gRPC content types (gRPC-Web and gRPC with JSON are left to connect-es). */
const BINARY_GRPC = /^application\/grpc(\+proto)?$/i;
/** Why a call's signal aborts once its answer is made: one object, shared by every call, so nothing may annotate it. */
const CALL_ENDED = new ConnectError("the call ended", Code.Canceled);

/** Router options the lane does not honour: a method served with any of them takes connect-es's path. */
const NOT_HONOURED = ["binaryOptions", "writeMaxBytes", "shutdownSignal"] as const;

/**
 * A router made with `options`, recording the unary methods registered on it
 * by request path, each with its implementation, interceptors and options
 * merged as connect-es merges them (a service's own options over the
 * router's): what connect-es's gRPC handler for it holds, for the lane to
 * answer the same. A method not served over gRPC (`grpc: false`), or served
 * with an option the lane does not honour, is not recorded.
 */
export function createRecordingRouter(options: ConnectRouterOptions = {}): {
  router: ConnectRouter;
  methods: ReadonlyMap<string, UnaryMethod>;
} {
  const router = createConnectRouter(options);
  const methods = new Map<string, UnaryMethod>();
  const record = (spec: MethodImplSpec, own: Partial<ConnectRouterOptions> | undefined) => {
    const merged: Partial<ConnectRouterOptions> = own ? { ...validateUniversalHandlerOptions(options), ...own } : options;
    const given = { ...options, ...own }; // what was set, before connect-es fills in its defaults
    const path = createMethodUrl("/", spec.method);
    // A method registered again replaces what was recorded for it, as its new handler replaces the old.
    methods.delete(path);
    if (spec.kind !== "unary" || merged.grpc === false || NOT_HONOURED.some((name) => given[name] !== undefined)) return;
    const valid = validateUniversalHandlerOptions(merged);
    methods.set(path, {
      spec,
      interceptors: valid.interceptors,
      acceptCompression: valid.acceptCompression,
      compressMinBytes: valid.compressMinBytes,
      readMaxBytes: valid.readMaxBytes,
      maxTimeoutMs: valid.maxTimeoutMs,
    });
  };
  const recording: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, own) {
      router.service(service, implementation, own);
      for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) record(spec, own);
      return recording;
    },
    rpc(method, implementation, own) {
      router.rpc(method, implementation, own);
      record(createMethodImplSpec(method, implementation), own);
      return recording;
    },
  };
  return { router: recording, methods };
}

/** A binary gRPC unary call the lane serves: its method, request, parsed message and deadline. */
export interface GrpcUnaryCall {
  method: UnaryMethod;
  request: UniversalServerRequest;
  input: Message;
  timeoutMs: number | undefined;
  /**
   * The controller of `request`'s signal, when its maker gives it: the call's
   * signal is then the request's own, which the lane aborts at the deadline,
   * with the error the call failed with, and once the answer is made, instead
   * of a second signal linked to it. Nothing but the call may use that signal.
   */
  controller: AbortController | undefined;
}

/**
 * The binary gRPC unary call `request` makes of `method`, or undefined when
 * connect-es's own gRPC path must serve it: not a unary method the router
 * was given for gRPC (createRecordingRouter), not a POST, compressed, not
 * exactly one envelope, a message over the router's limit, a timeout header
 * that does not parse or is over the router's limit, or a message that does not parse (the
 * adapter's common path refuses that one as invalid_argument). connect-es
 * serves every gRPC call, unary ones included, through its streaming
 * pipeline, about a dozen async generators per call, and ends each call by
 * aborting its signal without a reason (a DOMException and its stack trace);
 * an internal service's traffic is mostly the publish RPC, a unary call.
 */
export function grpcUnaryCall(
  method: UnaryMethod | undefined,
  request: UniversalServerRequest,
  body: Uint8Array,
  controller?: AbortController,
): GrpcUnaryCall | undefined {
  if (!method || request.method !== "POST") return undefined;
  if (!BINARY_GRPC.test(request.header.get("content-type") ?? "")) return undefined;
  const encoding = request.header.get("grpc-encoding");
  if (encoding !== null && encoding !== "identity") return undefined;
  const message = singleUncompressedMessage(body);
  if (!message || message.byteLength > method.readMaxBytes) return undefined;
  const timeout = parseTimeout(request.header.get("grpc-timeout"), method.maxTimeoutMs);
  if (timeout.error) return undefined;
  const input = parsed(method.spec.method.input, message);
  return input && { method, request, input, timeoutMs: timeout.timeoutMs, controller };
}

function parsed(schema: DescMessage, bytes: Uint8Array): Message | undefined {
  try {
    return fromBinary(schema, bytes);
  } catch {
    return undefined;
  }
}

/** A gRPC answer: its headers, its one envelope (none on an error), and its trailers. */
export interface GrpcAnswer {
  header: Headers;
  envelope: Uint8Array | undefined;
  trailer: Headers;
}

/**
 * The call answered as connect-es's gRPC handler answers it: the same
 * interceptors and implementation (connect-es's own `invokeUnaryImplementation`),
 * the message in one envelope, compressed with what the client accepts from
 * the router's size on, and the status (with its details and the error's
 * metadata) in the trailers. The call's signal aborts when the client goes
 * away, at its deadline, with the error the call failed with, and once the
 * answer is made.
 */
export async function answerGrpcUnary(call: GrpcUnaryCall): Promise<GrpcAnswer> {
  const { spec, interceptors, acceptCompression, compressMinBytes } = call.method;
  const { request } = call;
  const header = new Headers({ "content-type": contentTypeProto });
  const trailer = new Headers({ "grpc-status": grpcStatusOk });
  const compression = compressionNegotiate(acceptCompression, null, request.header.get("grpc-accept-encoding"), "grpc-accept-encoding");
  if (compression.response) header.set("grpc-encoding", compression.response.name);
  const ended = call.controller ?? createLinkedAbortController(request.signal);
  const deadline = call.timeoutMs === undefined ? undefined : atDeadline(ended, call.timeoutMs);
  const endsAt = call.timeoutMs === undefined ? undefined : Date.now() + call.timeoutMs;
  const context: HandlerContext = {
    method: spec.method,
    service: spec.method.parent,
    signal: ended.signal,
    timeoutMs: () => (endsAt === undefined ? undefined : endsAt - Date.now()),
    requestMethod: request.method,
    // The request's own headers: the lane has read what it needs of them, and nothing reads them after the call.
    requestHeader: request.header,
    responseHeader: header,
    responseTrailer: trailer,
    protocolName: "grpc",
    values: request.contextValues ?? createContextValues(),
    url: request.url,
  };
  let envelope: Uint8Array | undefined;
  try {
    const output = await invokeUnaryImplementation(spec, context, call.input, interceptors);
    const bytes = toBinary(spec.method.output, output);
    envelope =
      compression.response && bytes.byteLength >= compressMinBytes
        ? encodeEnvelope(COMPRESSED_FLAG, await compression.response.compress(bytes))
        : encodeEnvelope(0, bytes);
  } catch (error) {
    ended.abort(error);
    setTrailerStatus(
      trailer,
      error instanceof ConnectError ? error : new ConnectError("internal error", Code.Internal, undefined, undefined, error),
    );
  } finally {
    clearTimeout(deadline);
    ended.abort(CALL_ENDED);
  }
  return { header, envelope, trailer };
}

/** Aborts `controller` with deadline_exceeded in `timeoutMs` (at once if that is not positive), as connect-es's deadline signal does; answers the timer to clear. */
function atDeadline(controller: AbortController, timeoutMs: number): NodeJS.Timeout | undefined {
  const expire = () => {
    if (!controller.signal.aborted) controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
  };
  if (timeoutMs > 0) return setTimeout(expire, timeoutMs);
  expire();
  return undefined;
}

/**
 * Connection-specific headers: HTTP/2 forbids them (Node throws on them, for
 * trailers from inside its own event), and on HTTP/1.1 they would change how
 * the answer is framed. They are never a call's metadata.
 */
const CONNECTION_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
  "te",
]);

/**
 * Writes `answer` to the client, its grpc-message encoded as the gRPC spec
 * says (grpc-message.ts). A response that cannot be written is reset: the
 * client sees the call fail rather than wait for its deadline.
 */
export function writeGrpcAnswer(res: NodeResponse, answer: GrpcAnswer): void {
  reencode(answer.trailer);
  try {
    res.writeHead(200, nodeHeaders(answer.header));
    res.addTrailers(nodeHeaders(answer.trailer));
    if (answer.envelope) res.end(answer.envelope);
    else res.end();
  } catch {
    res.destroy();
  }
}

/** Headers as Node writes them: each name once (set-cookie as a list), without connection-specific ones. */
function nodeHeaders(headers: Headers): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of headers) if (!CONNECTION_HEADERS.has(name)) out[name] = value;
  const cookies = headers.getSetCookie();
  if (cookies.length > 1) out["set-cookie"] = cookies;
  return out;
}
