/** Optional fields are absent, never null, in domain records. */
export function optional<K extends string, V>(key: K, value: V | null): { [P in K]?: V } {
  return (value === null ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * SQLSTATE classes 22 (data exception) and 23 (integrity constraint
 * violation): the statement's data was refused and nothing was written, so
 * its rows may be retried one by one to find the bad one. Anything else (a
 * lost connection) may have written: not retried.
 */
export function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^2[23]/.test(code);
}
