import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";

export type NodeRequest = IncomingMessage | Http2ServerRequest;

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

export function declaredLength(req: NodeRequest): number | undefined {
  const header = req.headers["content-length"];
  return header === undefined ? undefined : Number(header);
}

export function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, "resource_exhausted", `request body is larger than the limit of ${maxBytes} bytes`);
}

/** Reads the whole body, refusing (413) as soon as it passes `maxBytes`. */
export async function readBody(req: NodeRequest, maxBytes: number): Promise<Buffer> {
  const length = declaredLength(req);
  if (length !== undefined && length > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const MAX_JSON_DEPTH = 32;

/** Parses a JSON object body with clear 400s for every way it can be wrong. */
export function parseJsonObject(bytes: Buffer): Record<string, unknown> {
  if (bytes.byteLength === 0) return {};
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new HttpError(400, "invalid_argument", "request body is not valid UTF-8");
  }
  assertDepth(text);
  let value: unknown;
  try {
    // A "__proto__" key would turn into a prototype (and vanish) in the
    // protobuf conversion, so it is refused while the text is still text.
    value = JSON.parse(text, (key, item) => {
      if (key === "__proto__") throw new HttpError(400, "invalid_argument", "request body may not use the key __proto__");
      return item;
    });
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, "invalid_argument", `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new HttpError(400, "invalid_argument", "request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

/** Refuses deeply nested JSON before parsing it, so nothing downstream recurses on it. */
function assertDepth(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) throw new HttpError(400, "invalid_argument", `request body nests deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
}
