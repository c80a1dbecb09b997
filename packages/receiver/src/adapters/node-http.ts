import type { IncomingMessage, ServerResponse } from "node:http";
import { BodyTooLargeError } from "../errors.js";
import { DEFAULT_MAX_BODY_BYTES, type ReceiverOrOptions, readRawBody, receiverOf, refuseTooLarge, writeResponse } from "./raw-body.js";

/**
 * A `node:http` request listener that receives notifications on any path:
 * `createServer(httpReceiver({ keys, onNotification })).listen(9000)`.
 * It reads the raw body itself; answers 405 to anything but POST.
 */
export function httpReceiver(options: ReceiverOrOptions): (request: IncomingMessage, response: ServerResponse) => void {
  const receiver = receiverOf(options);
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return (request, response) => {
    if (request.method !== "POST") {
      writeResponse(response, { status: 405, headers: { allow: "POST" }, body: "" });
      request.resume();
      return;
    }
    readRawBody(request, limit)
      .then((body) => receiver.handle({ body, headers: request.headers }))
      .then(
        (answer) => writeResponse(response, answer),
        (error: unknown) => {
          if (error instanceof BodyTooLargeError) return refuseTooLarge(request, response, error);
          // The client went away while sending: nobody is left to answer.
          response.destroy();
        },
      );
  };
}
