import type { IncomingMessage, ServerResponse } from "node:http";
import { BodyTooLargeError } from "../errors.js";
import { DEFAULT_MAX_BODY_BYTES, type ReceiverOrOptions, readRawBody, receiverOf, refuseTooLarge, writeResponse } from "./raw-body.js";

/** The parts of Express's request the middleware uses; Express 4 and 5 both fit. */
type ExpressRequest = IncomingMessage & { body?: unknown };

/**
 * Express middleware: `app.post("/webhooks", expressReceiver({ keys, onNotification }))`.
 *
 * The signature covers the bytes the service sent, so the middleware needs
 * them untouched. It reads the request stream itself, or takes the Buffer
 * `express.raw()` left in `req.body`. A body that `express.json()` (or any
 * other parser) already consumed cannot be verified: the middleware then
 * passes a TypeError to `next` — mount it before such parsers or on a route
 * of its own.
 */
export function expressReceiver(
  options: ReceiverOrOptions,
): (request: ExpressRequest, response: ServerResponse, next: (error?: unknown) => void) => void {
  const receiver = receiverOf(options);
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return (request, response, next) => {
    let body: Promise<Buffer>;
    try {
      body = rawBodyOf(request, limit);
    } catch (error) {
      next(error);
      return;
    }
    body
      .then((bytes) => receiver.handle({ body: bytes, headers: request.headers }))
      .then(
        (answer) => writeResponse(response, answer),
        (error: unknown) => {
          if (error instanceof BodyTooLargeError) refuseTooLarge(request, response, error);
          else next(error);
        },
      );
  };
}

function rawBodyOf(request: ExpressRequest, limit: number): Promise<Buffer> {
  if (Buffer.isBuffer(request.body)) return Promise.resolve(request.body);
  // Express 4's body-parser leaves `{}` on requests it skipped; their stream is unread.
  const untouched = request.body === undefined || isEmptyPlainObject(request.body);
  if (untouched && !request.readableEnded) return readRawBody(request, limit);
  throw new TypeError(
    "expressReceiver: the request body was already parsed, so its raw bytes are gone and X-Signature cannot be verified; " +
      'mount the receiver before express.json(), or give its route express.raw({ type: "*/*" })',
  );
}

function isEmptyPlainObject(value: unknown): boolean {
  return (
    typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype && Object.keys(value).length === 0
  );
}
