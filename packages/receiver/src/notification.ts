import { MalformedBodyError } from "./errors.js";

/** The base fields the service puts first in every body. */
export const EVENT_FIELD = "Event";
export const TIMESTAMP_FIELD = "Timestamp";

const EVENT_NAME = /^[A-Za-z][A-Za-z0-9]{0,63}\.[A-Za-z][A-Za-z0-9]{0,63}$/;
/** ISO 8601 UTC with exactly three fraction digits, as the service writes it. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A JSON value as `JSON.parse` returns it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [field: string]: JsonValue };

/** An event's own fields: the body without `Event` and `Timestamp`. */
export type Payload = { [field: string]: JsonValue };

/** The body's meaning: what `verifyNotification` returns besides the headers' facts. */
export interface ParsedBody {
  event: string;
  timestamp: Date;
  payload: Payload;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Parses verified body bytes; anything but a notification object is a MalformedBodyError. */
export function parseBody(body: Uint8Array): ParsedBody {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(body));
  } catch (error) {
    throw new MalformedBodyError(`the body is not UTF-8 JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new MalformedBodyError("the body is not a JSON object");
  const { [EVENT_FIELD]: event, [TIMESTAMP_FIELD]: timestampText, ...payload } = value as Record<string, JsonValue>;
  if (typeof event !== "string" || !EVENT_NAME.test(event)) {
    throw new MalformedBodyError(`the body's ${EVENT_FIELD} is not an event name like Order.Created`);
  }
  const timestamp = typeof timestampText === "string" && TIMESTAMP.test(timestampText) ? new Date(timestampText) : undefined;
  if (!timestamp || Number.isNaN(timestamp.getTime())) {
    throw new MalformedBodyError(`the body's ${TIMESTAMP_FIELD} is not an ISO 8601 UTC time like 2026-11-21T22:52:13.940Z`);
  }
  return { event, timestamp, payload };
}
