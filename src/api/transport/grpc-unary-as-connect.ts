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
import { ACCEPTED_COMPRESSIONS, COMPRESSED_FLAG, singleUncompressedMessage } from "./request-message.js";

/** The binary gRPC content types (gRPC-Web and gRPC with JSON are left to Connect). */
const BINARY_GRPC = /^application\/grpc(\+proto)?$/i;
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
/** An error's JSON, decompressed, at most: the service's errors are a message and a few details. */
const ERROR_JSON_MAX_BYTES = 1024 * 1024;

/**
 * A binary gRPC unary call, as the equivalent Connect unary call to the same
 * router handler; undefined when the call must take connect-es's own gRPC
 * path: not a POST, not unary, compressed, not exactly one envelope, or a
 * timeout header that does not parse (that path answers such calls with
 * their errors).
 *
 * Why: connect-es serves every gRPC call, unary ones included, through its
 * streaming pipeline, a dozen async generators per call, which costs about
 * three times the CPU of its Connect unary handler for the same call, and an
 * internal service's traffic is mostly the publish RPC, a unary call. Served
 * as a Connect unary call, it keeps the router's interceptors (auth, limits,
 * logging, metrics, tracing), validation and error mapping: only the framing
 * differs, and `asGrpcResponse` puts the answer back into gRPC's. A handler
 * sees the call as Connect's (`protocolName` "connect", a Connect content
 * type, without the gRPC headers listed in GRPC_REQUEST_HEADERS); none here
 * reads them.
 */
export function asConnectUnary(method: DescMethod, request: UniversalServerRequest, body: Uint8Array): UniversalServerRequest | undefined {
  if (method.methodKind !== "unary" || request.method !== "POST") return undefined;
  if (!BINARY_GRPC.test(request.header.get("content-type") ?? "")) return undefined;
  const encoding = request.header.get("grpc-encoding");
  if (encoding !== null && encoding !== "identity") return undefined;
  const message = singleUncompressedMessage(body);
  if (!message) return undefined;
  const timeout = parseTimeout(request.header.get("grpc-timeout"), Number.POSITIVE_INFINITY);
  if (timeout.error || (timeout.timeoutMs ?? 0) > CONNECT_TIMEOUT_MAX_MS) return undefined;

  const header = new Headers();
  for (const [name, value] of request.header) {
    // Metadata a gRPC client names connect-* means nothing to gRPC: it must not become this call's Connect protocol.
    if (!GRPC_REQUEST_HEADERS.includes(name) && !name.startsWith("connect-")) header.append(name, value);
  }
  header.set("content-type", "application/proto");
  header.set("connect-protocol-version", "1");
  // gRPC counts down to the nanosecond, Connect in whole milliseconds: rounded up, a deadline is never earlier.
  if (timeout.timeoutMs !== undefined) header.set("connect-timeout-ms", String(Math.ceil(timeout.timeoutMs)));
  // The answer is compressed as connect-es's gRPC handler would: with what the client accepts, from 1 KiB.
  const accepted = request.header.get("grpc-accept-encoding");
  if (accepted !== null) header.set("accept-encoding", accepted);
  return { ...request, header, body: createAsyncIterable([message]) };
}

/**
 * The Connect unary answer to a call `asConnectUnary` translated, as the
 * gRPC answer connect-es's gRPC handler gives: the message in one envelope
 * (compressed, and marked so, when Connect compressed it), and the status
 * (with its details and the error's metadata) in the trailers. Connect
 * unary puts an error's metadata among the response headers; no handler
 * here sets response headers of its own, so on an error every header that
 * is not the protocol's goes to the trailers, where gRPC carries an error's
 * metadata.
 */
export async function asGrpcResponse(response: UniversalServerResponse): Promise<UniversalServerResponse> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of response.body ?? []) chunks.push(chunk);
  const bytes = chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
  const [connectHeader, trailer] = trailerDemux(response.header ?? new Headers());
  const compression = connectHeader.get("content-encoding");
  const metadata = new Headers(connectHeader);
  for (const name of CONNECT_RESPONSE_HEADERS) metadata.delete(name);
  const header = new Headers({ "content-type": contentTypeProto });

  if (response.status === 200) {
    for (const [name, value] of metadata) header.append(name, value);
    if (compression !== null) header.set("grpc-encoding", compression);
    trailer.set("grpc-status", grpcStatusOk);
    const envelope = encodeEnvelope(compression === null ? 0 : COMPRESSED_FLAG, bytes);
    return { status: 200, header, body: createAsyncIterable([envelope]), trailer };
  }
  const fallback = new ConnectError(`HTTP ${response.status}`, codeFromHttpStatus(response.status));
  let error: ConnectError;
  try {
    // An error's JSON is compressed too, past 1 KiB (long details).
    const codec = ACCEPTED_COMPRESSIONS.find((candidate) => candidate.name === compression);
    const json = codec ? await codec.decompress(bytes, ERROR_JSON_MAX_BYTES) : bytes;
    error = errorFromJsonBytes(json, metadata, fallback);
  } catch (thrown) {
    error = thrown instanceof ConnectError ? thrown : new ConnectError("internal error", Code.Internal);
  }
  return { status: 200, header, body: createAsyncIterable([]), trailer: setTrailerStatus(trailer, error) };
}
