import { ValidationError } from "./errors.js";
import type { Cursor } from "./ports.js";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;

export interface Page<T> {
  items: T[];
  /** Opaque; empty on the last page. */
  nextPageToken: string;
}

export function pageSize(requested: number): number {
  if (requested < 0) throw new ValidationError("pageSize must not be negative", "pageSize");
  return requested === 0 ? DEFAULT_PAGE_SIZE : Math.min(requested, MAX_PAGE_SIZE);
}

/** Page tokens are opaque to callers: base64url of the last item's position. */
export function encodePageToken(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt.toISOString(), cursor.id])).toString("base64url");
}

export function decodePageToken(token: string): Cursor | undefined {
  if (token === "") return undefined;
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as unknown[];
    const date = new Date(String(createdAt));
    if (typeof id === "string" && !Number.isNaN(date.getTime())) return { createdAt: date, id };
  } catch {}
  throw new ValidationError("pageToken is not a token this service issued; pass nextPageToken from the previous page", "pageToken");
}

/** Fetches one more than asked to learn whether another page follows. */
export async function paginate<T extends Cursor>(size: number, fetch: (limit: number) => Promise<T[]>): Promise<Page<T>> {
  const rows = await fetch(size + 1);
  const items = rows.slice(0, size);
  const last = items.at(-1);
  return { items, nextPageToken: rows.length > size && last ? encodePageToken(last) : "" };
}
