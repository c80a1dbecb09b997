import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { contentTypeRegExp } from "@connectrpc/connect/protocol-grpc";

/**
 * grpc-message as the gRPC spec percent-encodes it: every byte of its UTF-8
 * outside printable ASCII (0x20–0x7E), and `%` itself, as `%XX`.
 *
 * connect-es encodes it with `encodeURIComponent`, which also encodes
 * printable characters such as `;`, `/` and `:`; @grpc/grpc-js decodes it
 * with `decodeURI`, which leaves those encoded, so its users would read
 * `%3B` for `;`. A message encoded as the spec says decodes to the same
 * text with either function, and with every other gRPC library's decoder.
 */
export function specEncodedGrpcMessage(connectEncoded: string): string {
  let text: string;
  try {
    text = decodeURIComponent(connectEncoded);
  } catch {
    text = connectEncoded; // not percent-encoded as connect-es does it: sent as the text it is
  }
  let encoded = "";
  for (const byte of Buffer.from(text, "utf8")) {
    encoded +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return encoded;
}

/**
 * A gRPC answer (not gRPC-Web, whose trailers are in its body) with its
 * grpc-message encoded as the spec says. connect-es sets the trailers of a
 * call it serves itself as its body ends, so the body is wrapped to re-encode
 * them then.
 */
export function withSpecGrpcMessage(response: UniversalServerResponse): UniversalServerResponse {
  const { trailer, body } = response;
  if (!body) {
    // Most answers are successes, with no message to re-encode.
    if (trailer?.has("grpc-message") && isGrpcAnswer(response.header)) reencode(trailer);
    return response;
  }
  if (!trailer || !isGrpcAnswer(response.header)) return response;
  return {
    ...response,
    body: (async function* () {
      yield* body;
      reencode(trailer);
    })(),
  };
}

/** An answer in gRPC's content type, as connect-es defines it (gRPC-Web's is another). */
function isGrpcAnswer(header: UniversalServerResponse["header"]): boolean {
  return contentTypeRegExp.test((header instanceof Headers ? header : new Headers(header)).get("content-type") ?? "");
}

/** `trailer`'s grpc-message, as connect-es encodes it, encoded as the gRPC spec says instead. */
function reencode(trailer: Headers): void {
  const message = trailer.get("grpc-message");
  if (message) trailer.set("grpc-message", specEncodedGrpcMessage(message));
}
