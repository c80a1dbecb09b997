import type { QueryConfig } from "pg";

/**
 * What the embedded database's thread (embedded-thread.ts) and the pool
 * that owns it (embedded-connection.ts) say to each other. Everything here
 * crosses threads by structured clone: plain data, no functions.
 */

/** The thread's `workerData`: where the database lives and the session's settings. */
export interface ThreadOptions {
  directory: string;
  /** `SET` clauses for the one session, e.g. `enable_seqscan=off`. */
  settings: readonly string[];
}

/** A statement to run (`id` pairs it with its answer), or the request to close. */
export type ToThread = { kind: "query"; id: number; config: string | QueryConfig; values?: unknown[] } | { kind: "close" };

/** An error as plain data: its message and the fields pg gives a database error (`code`, `detail`, `constraint`…). */
export interface ErrorData {
  message: string;
  fields: Record<string, string | number>;
}

export type FromThread =
  | { kind: "ready" }
  | { kind: "failed"; error: ErrorData }
  | { kind: "rows"; id: number; command: string; rowCount: number | null; rows: unknown[] }
  | { kind: "refused"; id: number; error: ErrorData }
  /** The session itself failed (pg's "error" event): statements after it will fail too. */
  | { kind: "broken"; error: ErrorData }
  | { kind: "closed" };

/** `error` as data: its message and its own string and number fields. */
export function errorData(error: unknown): ErrorData {
  if (!(error instanceof Error)) return { message: String(error), fields: {} };
  const fields: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(error)) {
    // pg sets `name` to the protocol message's ("error"): the Error made from this keeps its own.
    if (key !== "name" && (typeof value === "string" || typeof value === "number")) fields[key] = value;
  }
  return { message: error.message, fields };
}

/** An Error again, made in the receiving thread, with the fields callers test (`error.code === "23505"`). */
export function errorFrom(data: ErrorData): Error {
  return Object.assign(new Error(data.message), data.fields);
}
