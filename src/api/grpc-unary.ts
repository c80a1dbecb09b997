import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  createAsyncIterable,
  encodeEnvelope,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { codeFromHttpStatus, errorFromJsonBytes, trailerDemux } from "@connectrpc/connect/protocol-connect";
import { contentTypeProto, grpcStatusOk, parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";

/** The binary gRPC content types (gRPC-Web and gRPC with JSON are left to Connect). */
const BINARY_GRPC = /^application\/grpc(\+proto)?$/i;
/** Envelope header: a flags byte (0: uncompressed), then the message's length (32-bit big-endian). */
const ENVELOPE_HEADER_BYTES = 5;
/** The longest timeout the Connect protocol's header can carry (ten digits of milliseconds). */
const CONNECT_TIMEOUT_MAX_MS = 9_999_999_999;
/** gRPC request headers that the Connect call carries differently, or not at all. */
const GRPC_REQUEST_HEADERS = [
  "content-type",
  "content-length",
  "te",
  "grpc-timeout",
  "grpc-encoding",
  "grpc-accept-encoding",
  "accept-encoding",
  "content-encoding",
];
/** Connect unary response headers that are the protocol's own, not the call's metadata. */
const CONNECT_RESPONSE_HEADERS = ["content-type", "content-length", "content-encoding", "connect-protocol-version"];

/**
 * A binary gRPC unary call, as the equivalent Connect unary call to the same
 * router handler; undefined when the call must take connect-es's own gRPC
 * path: not unary, compressed, not exactly one envelope, or a timeout
 * header that does not parse (that path answers such calls with their
 * errors).
 *
 * Why: connect-es serves every gRPC call, unary ones included, through its
 * streaming pipeline, a dozen async generators per call, which costs about
 * three times the CPU of its Connect unary handler for the same call. The
 * publish RPC of an internal service is mostly this. Served as a Connect
 * unary call, it keeps the router's interceptors (auth, limits, logging,
 * metrics, tracing), validation and error mapping: only the framing differs,
 * and `asGrpcResponse` puts the answer back into gRPC's.
 */
export function asConnectUnary(method: DescMethod, request: UniversalServerRequest, body: Uint8Array): UniversalServerRequest | undefined {
  if (method.methodKind !== "unary") return undefined;
  if (!BINARY_GRPC.test(request.header.get("content-type") ?? "")) return undefined;
  const encoding = request.header.get("grpc-encoding");
  if (encoding !== null && encoding !== "identity") return undefined;
  if (body.byteLength < ENVELOPE_HEADER_BYTES || body[0] !== 0) return undefined;
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  if (view.getUint32(1) !== body.byteLength - ENVELOPE_HEADER_BYTES) return undefined;
  const timeout = parseTimeout(request.header.get("grpc-timeout"), Number.POSITIVE_INFINITY);
  if (timeout.error || (timeout.timeoutMs ?? 0) > CONNECT_TIMEOUT_MAX_MS) return undefined;

  const header = new Headers(request.header);
  for (const name of GRPC_REQUEST_HEADERS) header.delete(name);
  header.set("content-type", "application/proto");
  header.set("connect-protocol-version", "1");
  // gRPC counts down to the nanosecond, Connect in whole milliseconds: rounded up, a deadline is never earlier.
  if (timeout.timeoutMs !== undefined) header.set("connect-timeout-ms", String(Math.ceil(timeout.timeoutMs)));
  return { ...request, header, body: createAsyncIterable([body.subarray(ENVELOPE_HEADER_BYTES)]) };
}

/**
 * The Connect unary answer to a call `asConnectUnary` translated, as the
 * gRPC answer connect-es's gRPC handler gives: the message in one
 * uncompressed envelope, and the status (with its details and the error's
 * metadata) in the trailers. Connect unary puts an error's metadata among
 * the response headers; no handler here sets response headers of its own,
 * so on an error every header that is not the protocol's goes to the
 * trailers, where gRPC carries an error's metadata.
 */
export async function asGrpcResponse(response: UniversalServerResponse): Promise<UniversalServerResponse> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of response.body ?? []) chunks.push(chunk);
  const bytes = chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
  const [connectHeader, trailer] = trailerDemux(response.header ?? new Headers());
  const metadata = new Headers(connectHeader);
  for (const name of CONNECT_RESPONSE_HEADERS) metadata.delete(name);
  const header = new Headers({ "content-type": contentTypeProto });

  if (response.status === 200) {
    for (const [name, value] of metadata) header.append(name, value);
    trailer.set("grpc-status", grpcStatusOk);
    return { status: 200, header, body: createAsyncIterable([encodeEnvelope(0, bytes)]), trailer };
  }
  const fallback = new ConnectError(`HTTP ${response.status}`, codeFromHttpStatus(response.status));
  let error: ConnectError;
  try {
    error = errorFromJsonBytes(bytes, metadata, fallback);
  } catch (thrown) {
    error = thrown instanceof ConnectError ? thrown : new ConnectError("internal error", Code.Internal);
  }
  return { status: 200, header, body: createAsyncIterable([]), trailer: setTrailerStatus(trailer, error) };
}
