import type { IncomingMessage, ServerResponse } from "node:http";
import { BodyTooLargeError } from "../errors.js";
import { createReceiver, type Receiver, type ReceiverOptions, type ReceiverResponse } from "../receiver.js";

/**
 * 2 MiB. The service accepts events up to its `MAX_BODY_BYTES` (1 MiB by
 * default) and a notification adds its base fields; raise this if the
 * service's limit is raised.
 */
export const DEFAULT_MAX_BODY_BYTES = 2 * 1_048_576;

export interface AdapterOptions {
  /** Bodies larger than this are refused with 413 before they are read to the end. Default 2 MiB. */
  maxBodyBytes?: number;
}

/** An adapter takes a receiver's options, or a receiver made with `createReceiver`. */
export type ReceiverOrOptions = (ReceiverOptions | { receiver: Receiver }) & AdapterOptions;

export function receiverOf(options: ReceiverOrOptions): Receiver {
  return "receiver" in options ? options.receiver : createReceiver(options);
}

/** Reads a request's body to the end as raw bytes, refusing more than `limitBytes`. */
export function readRawBody(request: IncomingMessage, limitBytes = DEFAULT_MAX_BODY_BYTES): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers["content-length"]);
    if (declared > limitBytes) return reject(new BodyTooLargeError(limitBytes));
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length > limitBytes) {
        cleanup();
        reject(new BodyTooLargeError(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, length));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("error", onError);
    };
    request.on("data", onData);
    request.on("end", onEnd);
    request.on("error", onError);
  });
}

/** Writes the receiver's answer. */
export function writeResponse(response: ServerResponse, answer: ReceiverResponse): void {
  response.writeHead(answer.status, answer.headers);
  response.end(answer.body);
}

/** Answers a body that is too large and closes the connection instead of reading the rest. */
export function refuseTooLarge(request: IncomingMessage, response: ServerResponse, error: BodyTooLargeError): void {
  response.once("finish", () => request.destroy());
  writeResponse(response, {
    status: error.status,
    headers: { "content-type": "application/json", connection: "close" },
    body: JSON.stringify({ error: error.code, message: error.message }),
  });
}
