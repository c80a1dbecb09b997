import { type DescMessage, fromBinary } from "@bufbuild/protobuf";
import {
  compressionNegotiate,
  createAsyncIterable,
  encodeEnvelope,
  pipe,
  transformDecompressEnvelope,
  transformSplitEnvelope,
  type UniversalServerRequest,
} from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { HttpError } from "./http-body.js";
import { parseJsonObject } from "./json-body.js";
import { structFieldError } from "./rest-fields.js";

/** The compressions the router accepts (connectNodeAdapter's default). */
export const ACCEPTED_COMPRESSIONS = [compressionGzip, compressionBrotli];

/** How a request carries its message: where (its framing), and as what (its codec). */
interface Carriage {
  framing: "connect-body" | "connect-query" | "envelopes";
  codec: "proto" | "json";
  /** The header naming the compression of a body (of the envelopes in it). */
  encodingHeader: string;
}

function carriageOf(request: Pick<UniversalServerRequest, "method" | "url" | "header">): Carriage | undefined {
  if (request.method === "GET") {
    const encoding = new URL(request.url).searchParams.get("encoding");
    return encoding === "proto" || encoding === "json" ? { framing: "connect-query", codec: encoding, encodingHeader: "" } : undefined;
  }
  const type = request.header.get("content-type") ?? "";
  const body = /^application\/(proto|json)(;.*)?$/i.exec(type);
  if (body) return { framing: "connect-body", codec: codecOf(body[1]), encodingHeader: "content-encoding" };
  const grpc = /^application\/grpc(-web)?(\+(proto|json))?(;.*)?$/i.exec(type);
  if (grpc) return { framing: "envelopes", codec: codecOf(grpc[3] ?? "proto"), encodingHeader: "grpc-encoding" };
  const connectStream = /^application\/connect\+(proto|json)(;.*)?$/i.exec(type);
  if (connectStream) return { framing: "envelopes", codec: codecOf(connectStream[1]), encodingHeader: "connect-content-encoding" };
  return undefined;
}

function codecOf(name: string | undefined): Carriage["codec"] {
  return name?.toLowerCase() === "json" ? "json" : "proto";
}

/** Whether the request speaks gRPC or gRPC-Web, which carry errors in trailers, not in the HTTP status. */
export function isGrpcRequest(contentType: string | undefined): boolean {
  return /^application\/grpc/i.test(contentType ?? "");
}

/**
 * Why the request's message is refused, or undefined when it is fine (or
 * fails in a way connect-es reports itself). A binary message must parse as
 * `schema`: connect-es parses before any interceptor runs and reports a
 * malformed message as `internal` (connect-es 2 maps its binary parse
 * failures so on both sides of a call), which would blame the server for
 * the client's bytes. A JSON message must pass the REST gateway's one JSON
 * check (`parseJsonObject`), which connect-es's lenient reading skips: it
 * decodes invalid UTF-8 to U+FFFD and lets a repeated key win silently. This
 * finds either first, so the edge can refuse it as `invalid_argument`. Costs
 * a second parse of the message.
 */
export async function malformedMessage(
  schema: DescMessage,
  request: UniversalServerRequest,
  body: Uint8Array,
  readMaxBytes: number,
): Promise<string | undefined> {
  const carriage = carriageOf(request);
  if (carriage === undefined) return undefined;
  let messages: Uint8Array[];
  try {
    messages = await messagesOf(carriage, request, body, readMaxBytes);
  } catch {
    return undefined; // a framing or compression error: connect-es answers it with its own code
  }
  for (const message of messages) {
    try {
      if (carriage.codec === "json") {
        const misplaced = structFieldError(schema, parseJsonObject(message));
        if (misplaced) return misplaced;
      } else fromBinary(schema, message);
    } catch (error) {
      if (error instanceof HttpError) return error.message;
      return `the request is not a valid ${schema.typeName} message: ${(error as Error).message}`;
    }
  }
  return undefined;
}

async function messagesOf(carriage: Carriage, request: UniversalServerRequest, body: Uint8Array, readMaxBytes: number) {
  if (carriage.framing === "connect-query") {
    const query = new URL(request.url).searchParams;
    const text = query.get("message") ?? "";
    const bytes = query.get("base64") === "1" ? Buffer.from(text, "base64url") : new TextEncoder().encode(text);
    const compression = negotiate(query.get("compression"), "accept-encoding");
    return [compression ? await compression.decompress(bytes, readMaxBytes) : bytes];
  }
  if (carriage.framing === "connect-body") {
    const compression = negotiate(request.header.get(carriage.encodingHeader), "accept-encoding");
    return [compression ? await compression.decompress(body, readMaxBytes) : body];
  }
  const compression = negotiate(request.header.get(carriage.encodingHeader), "grpc-accept-encoding");
  // Uncompressed, as a publisher's small messages almost always are: split here, without a stream per call.
  if (!compression) return splitEnvelopes(body, readMaxBytes);
  const messages: Uint8Array[] = [];
  const envelopes = pipe(
    createAsyncIterable([body]),
    transformSplitEnvelope(readMaxBytes),
    transformDecompressEnvelope(compression, readMaxBytes),
  );
  for await (const envelope of envelopes) messages.push(envelope.data);
  return messages;
}

/** Envelope flags: the message is compressed (with the request's grpc-encoding). */
export const COMPRESSED_FLAG = 0b01;
/** Envelope header: a flags byte, then the message's length (32-bit big-endian). */
const ENVELOPE_HEADER_BYTES = 5;

/**
 * The messages of a body of uncompressed envelopes. A body whose framing is
 * broken (cut short, a message over the limit, or marked compressed with no
 * encoding named) throws, as connect-es's own envelope reader does.
 */
function splitEnvelopes(body: Uint8Array, readMaxBytes: number): Uint8Array[] {
  const messages: Uint8Array[] = [];
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let offset = 0;
  while (offset < body.byteLength) {
    if (body.byteLength - offset < ENVELOPE_HEADER_BYTES) throw new Error("an envelope is cut short");
    const flags = view.getUint8(offset);
    const length = view.getUint32(offset + 1);
    if (flags & COMPRESSED_FLAG) throw new Error("a compressed envelope without an encoding");
    if (length > readMaxBytes) throw new Error("an envelope is over the limit");
    const start = offset + ENVELOPE_HEADER_BYTES;
    if (body.byteLength - start < length) throw new Error("an envelope is cut short");
    messages.push(body.subarray(start, start + length));
    offset = start + length;
  }
  return messages;
}

/** The one message of a body holding exactly one uncompressed envelope; undefined otherwise. */
export function singleUncompressedMessage(body: Uint8Array): Uint8Array | undefined {
  try {
    const messages = splitEnvelopes(body, Number.POSITIVE_INFINITY);
    return messages.length === 1 ? messages[0] : undefined;
  } catch {
    return undefined; // cut short, or marked compressed
  }
}

function negotiate(requested: string | null, acceptHeader: string) {
  const { request, error } = compressionNegotiate(ACCEPTED_COMPRESSIONS, requested, null, acceptHeader);
  if (error) throw error;
  return request;
}

/**
 * The request with its message replaced by an empty, valid one, for a call
 * the edge refuses: the handler then parses it without complaint and the
 * refusal interceptor answers in the request's own protocol.
 */
export function withEmptyMessage(request: UniversalServerRequest): UniversalServerRequest {
  const header = new Headers(request.header);
  for (const name of ["content-length", "content-encoding", "grpc-encoding"]) header.delete(name);
  const url = new URL(request.url);
  const json = request.method === "GET" ? url.searchParams.get("encoding") !== "proto" : /json/i.test(header.get("content-type") ?? "");
  const message = json ? "{}" : "";
  if (request.method === "GET") {
    url.searchParams.set("message", message);
    for (const name of ["base64", "compression"]) url.searchParams.delete(name);
  }
  const bytes = new TextEncoder().encode(message);
  // gRPC, gRPC-Web and Connect's streaming calls frame their messages in envelopes.
  const enveloped =
    isGrpcRequest(header.get("content-type") ?? undefined) || /^application\/connect\+/i.test(header.get("content-type") ?? "");
  const body = enveloped ? encodeEnvelope(0, bytes) : bytes;
  return { ...request, url: url.toString(), header, body: createAsyncIterable([body]) };
}
