import { randomUUID } from "node:crypto";

export type IdPrefix = "cli" | "key" | "sub" | "ntf";

/** Prefixed identifiers tell a reader (and a support ticket) what they name. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomUUID().replaceAll("-", "")}`;
}
