/**
 * What the embedded database's thread (embedded-worker.ts) and the service's
 * side of it (embedded-thread.ts) say to each other.
 */

/** Starting the thread: where its database is. */
export interface EmbeddedThreadData {
  directory: string;
}

/** To the thread: bytes a client wrote (any split of its wire-protocol messages), or close the database. */
export type ToEmbeddedThread = { kind: "bytes"; bytes: Uint8Array } | { kind: "close" };

/**
 * From the thread: the database is open; the bytes it answered (wire
 * protocol, in order); it gave up (the database could not open, a message
 * made no sense, PGlite failed, closing failed: the session is over); it
 * closed the database.
 */
export type FromEmbeddedThread =
  | { kind: "ready" }
  | { kind: "bytes"; bytes: Uint8Array }
  | { kind: "failed"; message: string }
  | { kind: "closed" };

/** `parts` in one new buffer of their exact size, which a post can hand over instead of copying. */
export function joined(parts: readonly Uint8Array[]): Uint8Array {
  const whole = new Uint8Array(parts.reduce((size, part) => size + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.byteLength;
  }
  return whole;
}
