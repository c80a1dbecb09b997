/**
 * Cuts the bytes a PostgreSQL client writes into whole frontend messages,
 * however the writes split or join them. The first message of a session is
 * the startup message, which has no type byte (its length comes first);
 * every later one is a type byte and then its length. A length counts itself
 * but not the type byte.
 */
export class FrontendMessages {
  #pending: Buffer = Buffer.alloc(0);
  #started = false;

  /** Takes `bytes` and answers every message they complete, in order, each a copy of its own. */
  push(bytes: Uint8Array): Uint8Array[] {
    let pending =
      this.#pending.length === 0 ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : Buffer.concat([this.#pending, bytes]);
    const messages: Uint8Array[] = [];
    for (;;) {
      const header = this.#started ? 5 : 4;
      if (pending.length < header) break;
      const length = this.#started ? 1 + pending.readInt32BE(1) : pending.readInt32BE(0);
      if (length < header) throw new Error(`a frontend message declares ${length} bytes, fewer than its own header`);
      if (pending.length < length) break;
      messages.push(new Uint8Array(pending.subarray(0, length)));
      pending = pending.subarray(length);
      this.#started = true;
    }
    // What is left of a message to come is kept as a copy: `bytes` is the caller's to reuse.
    this.#pending = Buffer.from(pending);
    return messages;
  }
}

/** Terminate ('X'): the client is leaving the session. */
export function isTerminate(message: Uint8Array): boolean {
  return message.length === 5 && message[0] === 0x58;
}
