import { ValidationError } from "./errors.js";
import { BASE_FIELDS } from "./event-catalog.js";
import type { JsonObject } from "./model.js";

/** ISO 8601 UTC with exactly three fraction digits and `Z`, as the spec shows. */
export function formatTimestamp(date: Date): string {
  return date.toISOString();
}

/**
 * The exact JSON every attempt of one notification sends: the base fields
 * `Event` and `Timestamp` first, then the event's own fields.
 */
export function buildNotificationBody(event: string, payload: JsonObject, at: Date): string {
  assertOwnFields(payload);
  return JSON.stringify({ Event: event, Timestamp: formatTimestamp(at), ...payload });
}

/** Keys that mean something to JavaScript objects; as data they invite prototype tricks downstream. */
const RESERVED_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const MAX_PAYLOAD_DEPTH = 32;

/**
 * An event's payload carries its own fields only (Event and Timestamp are the
 * service's), is at most 32 levels deep, and uses no prototype-related keys.
 * A `__proto__` key may already have become an object's prototype when the
 * payload was decoded, so a foreign prototype counts as one too. Every number
 * is finite: JSON has no NaN or Infinity (a literal such as 1e400 parses to
 * Infinity, and gRPC's Value can carry either), and the body would carry
 * `null` in its place.
 */
function assertOwnFields(payload: JsonObject): void {
  for (const field of BASE_FIELDS) {
    if (Object.hasOwn(payload, field)) {
      throw new ValidationError(`the payload may not set ${field}: the service sets the base fields Event and Timestamp itself`, "payload");
    }
  }
  assertPlainJson(payload, 0);
}

function assertPlainJson(value: unknown, depth: number): void {
  if (typeof value !== "object" || value === null) return;
  if (depth >= MAX_PAYLOAD_DEPTH) throw new ValidationError(`the payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels`, "payload");
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      assertFinite(item, index);
      assertPlainJson(item, depth + 1);
    }
    return;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    throw new ValidationError("the payload may not use the key __proto__", "payload");
  }
  for (const [key, item] of Object.entries(value)) {
    if (RESERVED_KEYS.has(key)) throw new ValidationError(`the payload may not use the key ${key}`, "payload");
    assertFinite(item, key);
    assertPlainJson(item, depth + 1);
  }
}

function assertFinite(value: unknown, key: string | number): void {
  if (typeof value === "number" && !Number.isFinite(value))
    throw new ValidationError(
      `the payload's ${typeof key === "number" ? `item ${key}` : `field ${JSON.stringify(key)}`} is ${value}, which JSON cannot carry: numbers must be finite (at most about 1.8e308)`,
      "payload",
    );
}
