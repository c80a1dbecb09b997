import { type DescMessage, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createContextValues,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import {
  compressionNegotiate,
  createDeadlineSignal,
  createLinkedAbortController,
  createMethodUrl,
  encodeEnvelope,
  invokeUnaryImplementation,
  type UniversalServerRequest,
} from "@connectrpc/connect/protocol";
import { contentTypeProto, grpcStatusOk, parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { ACCEPTED_COMPRESSIONS, COMPRESSED_FLAG, singleUncompressedMessage } from "./binary-message.js";
import { reencode } from "./grpc-message.js";
import type { NodeResponse } from "./rest-gateway.js";

/** A unary method's implementation and the interceptors around it, as the router was given them. */
export interface UnaryMethod {
  spec: Extract<MethodImplSpec, { kind: "unary" }>;
  interceptors: readonly Interceptor[];
}

/** The binary gRPC content types (gRPC-Web and gRPC with JSON are left to connect-es). */
const BINARY_GRPC = /^application\/grpc(\+proto)?$/i;
/** connect-es's default: an answer is compressed from this size on, when the client accepts it. */
const COMPRESS_MIN_BYTES = 1024;
/** Why a call's signal aborts once its answer is made: one object, as it carries nothing of the call. */
const CALL_ENDED = new ConnectError("the call ended", Code.Canceled);

/**
 * `router`, recording the unary methods registered on it, by request path,
 * with their implementation and interceptors: what connect-es's handler for
 * each holds, for `grpcUnaryCall` to call the same. Services registered
 * without interceptors of their own get the router's (`interceptors`), as in
 * connect-es.
 */
export function recordingUnaryMethods(
  router: ConnectRouter,
  interceptors: readonly Interceptor[] = [],
): { router: ConnectRouter; methods: ReadonlyMap<string, UnaryMethod> } {
  const methods = new Map<string, UnaryMethod>();
  const record = (spec: MethodImplSpec, options: { interceptors?: Interceptor[] } | undefined) => {
    if (spec.kind === "unary")
      methods.set(createMethodUrl("/", spec.method), { spec, interceptors: options?.interceptors ?? interceptors });
  };
  const recording: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, options) {
      router.service(service, implementation, options);
      for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) record(spec, options);
      return recording;
    },
    rpc(method, implementation, options) {
      router.rpc(method, implementation, options);
      record({ kind: method.methodKind, method, impl: implementation } as MethodImplSpec, options);
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
}

/**
 * The binary gRPC unary call `request` makes of `method`, or undefined when
 * connect-es's own gRPC path must serve it: not a unary method the router
 * was given, not a POST, compressed, not exactly one envelope, a timeout
 * header that does not parse, or a message that does not parse (the
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
): GrpcUnaryCall | undefined {
  if (!method || request.method !== "POST") return undefined;
  if (!BINARY_GRPC.test(request.header.get("content-type") ?? "")) return undefined;
  const encoding = request.header.get("grpc-encoding");
  if (encoding !== null && encoding !== "identity") return undefined;
  const message = singleUncompressedMessage(body);
  if (!message) return undefined;
  const timeout = parseTimeout(request.header.get("grpc-timeout"), Number.POSITIVE_INFINITY);
  if (timeout.error) return undefined;
  const input = parsed(method.spec.method.input, message);
  return input && { method, request, input, timeoutMs: timeout.timeoutMs };
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
 * the message in one envelope, compressed past 1 KiB with what the client
 * accepts, and the status (with its details and the error's metadata) in
 * the trailers. The call's signal aborts when the client goes away, at its
 * deadline, and once the answer is made.
 */
export async function answerGrpcUnary(call: GrpcUnaryCall): Promise<GrpcAnswer> {
  const { spec, interceptors } = call.method;
  const { request } = call;
  const header = new Headers({ "content-type": contentTypeProto });
  const trailer = new Headers({ "grpc-status": grpcStatusOk });
  const compression = compressionNegotiate(ACCEPTED_COMPRESSIONS, null, request.header.get("grpc-accept-encoding"), "grpc-accept-encoding");
  if (compression.response) header.set("grpc-encoding", compression.response.name);
  const deadline = call.timeoutMs === undefined ? undefined : createDeadlineSignal(call.timeoutMs);
  const ended = createLinkedAbortController(deadline?.signal, request.signal);
  const endsAt = call.timeoutMs === undefined ? undefined : Date.now() + call.timeoutMs;
  const context: HandlerContext = {
    method: spec.method,
    service: spec.method.parent,
    signal: ended.signal,
    timeoutMs: () => (endsAt === undefined ? undefined : endsAt - Date.now()),
    requestMethod: request.method,
    requestHeader: request.header,
    responseHeader: header,
    responseTrailer: trailer,
    protocolName: "grpc",
    values: request.contextValues ?? createContextValues(),
    url: request.url,
  };
  let envelope: Uint8Array | undefined;
  try {
    const output = await invokeUnaryImplementation(spec, context, call.input, interceptors as Interceptor[]);
    const bytes = toBinary(spec.method.output, output);
    envelope =
      compression.response && bytes.byteLength >= COMPRESS_MIN_BYTES
        ? encodeEnvelope(COMPRESSED_FLAG, await compression.response.compress(bytes))
        : encodeEnvelope(0, bytes);
  } catch (error) {
    setTrailerStatus(
      trailer,
      error instanceof ConnectError ? error : new ConnectError("internal error", Code.Internal, undefined, undefined, error),
    );
  } finally {
    deadline?.cleanup();
    ended.abort(CALL_ENDED);
  }
  return { header, envelope, trailer };
}

/** Writes `answer` to the client, its grpc-message encoded as the gRPC spec says (grpc-message.ts). */
export function writeGrpcAnswer(res: NodeResponse, answer: GrpcAnswer): void {
  reencode(answer.trailer);
  res.writeHead(200, nodeHeaders(answer.header));
  res.addTrailers(nodeHeaders(answer.trailer));
  if (answer.envelope) res.end(answer.envelope);
  else res.end();
}

function nodeHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) out[name] = value;
  return out;
}
