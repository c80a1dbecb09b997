import { randomUUID } from "node:crypto";
import type { NodeRequest, NodeResponse } from "./http-body.js";

export const REQUEST_ID_HEADER = "x-request-id";

/** What a caller's id may look like to be kept: anything else (too long, spaces, control characters) is replaced. */
const ACCEPTABLE = /^[\w.:/+=@-]{1,128}$/;

const ids = new WeakMap<NodeRequest, string>();

/**
 * Gives the request its id, the caller's `X-Request-Id` when it has an
 * acceptable one, else a new UUID, and answers it in the response's
 * `X-Request-Id` header (for gRPC: in the response metadata).
 */
export function assignRequestId(req: NodeRequest, res: NodeResponse): string {
  const presented = req.headers[REQUEST_ID_HEADER];
  const id = typeof presented === "string" && ACCEPTABLE.test(presented) ? presented : randomUUID();
  ids.set(req, id);
  res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

/** The id `assignRequestId` gave the request; undefined if it gave none. */
export function requestIdOf(req: NodeRequest): string | undefined {
  return ids.get(req);
}
