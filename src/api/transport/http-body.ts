import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

/** An HTTP-level refusal, written as a Connect error JSON with `status`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Answers `error` as its Connect error JSON; a response already under way is cut instead. */
export function writeError(res: NodeResponse, error: HttpError, extraHeaders: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ code: error.code, message: error.message });
  res.writeHead(error.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...extraHeaders });
  res.end(body);
}

export function declaredLength(req: NodeRequest): number | undefined {
  const header = req.headers["content-length"];
  return header === undefined ? undefined : Number(header);
}

export function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, "resource_exhausted", `request body is larger than the limit of ${maxBytes} bytes`);
}

/**
 * Reads the whole body, refusing (413) as soon as it passes `maxBytes`. A
 * refused body is left unread, to be discarded by `discardBody` after the
 * answer: destroying the request would reset the connection under the answer.
 */
export function readBody(req: NodeRequest, maxBytes: number): Promise<Buffer> {
  const length = declaredLength(req);
  if (length !== undefined && length > maxBytes) return Promise.reject(tooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
      req.pause();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > maxBytes) {
        stop();
        reject(tooLarge(maxBytes));
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    const onClose = () => onError(new Error("the client closed the request before its body ended"));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

/** How much of a refused body is read and thrown away, in multiples of the body limit, and for how long. */
const DISCARD_FACTOR = 8;
const DISCARD_MS = 10_000;

/**
 * Reads and throws away the rest of a refused body, so that a client still
 * sending it reads the answer: a socket closed with unread data sends a
 * reset, and the client's kernel drops whatever of the answer it had not read
 * yet. Bounded like nginx's lingering close; past the bounds the connection is
 * cut. An HTTP/2 stream ends on its own once answered.
 */
export function discardBody(req: NodeRequest, maxBodyBytes: number): void {
  if (req.readableEnded || "stream" in req) {
    req.resume();
    return;
  }
  let discarded = 0;
  const cut = () => {
    done();
    req.socket.destroy();
  };
  const timer = setTimeout(cut, DISCARD_MS);
  const onData = (chunk: Buffer) => {
    discarded += chunk.byteLength;
    if (discarded > DISCARD_FACTOR * maxBodyBytes) cut();
  };
  const done = () => {
    clearTimeout(timer);
    req.off("data", onData);
  };
  req.on("data", onData);
  req.once("end", done);
  req.once("close", done);
  req.resume();
}
