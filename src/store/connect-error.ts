/** The database named by DATABASE_URL could not be reached or refused us at start: a setting to fix, not a crash. */
export class StoreConnectError extends Error {
  constructor(redactedUrl: string, cause: unknown) {
    super(`DATABASE_URL ${redactedUrl}: cannot connect: ${reasonOf(cause)}`, { cause });
  }
}

/** What the driver said, in one line (a refused dual-stack connect is an AggregateError with no message of its own). */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const inner =
    error instanceof AggregateError ? error.errors.map((each: unknown) => (each instanceof Error ? each.message : String(each))) : [];
  const text = error.message || inner.join("; ") || String((error as { code?: unknown }).code ?? error.name);
  return text.replace(/\s+/g, " ").trim();
}
