import { randomUUID } from "node:crypto";

export type IdPrefix = "cli" | "key" | "sub" | "ntf";

/** Prefixed identifiers tell a reader (and a support ticket) what they name. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomUUID().replaceAll("-", "")}`;
}

/** True for ids this service issues; anything else can't name a record and never reaches a store. */
export function isWellFormedId(prefix: IdPrefix, id: string): boolean {
  return id.length === prefix.length + 33 && id.startsWith(`${prefix}_`) && /^[0-9a-f]{32}$/.test(id.slice(prefix.length + 1));
}
