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

/** An event's payload carries its own fields only: Event and Timestamp are the service's. */
export function assertOwnFields(payload: JsonObject): void {
  for (const field of BASE_FIELDS) {
    if (Object.hasOwn(payload, field)) {
      throw new ValidationError(`the payload may not set ${field}: the service sets the base fields Event and Timestamp itself`, "payload");
    }
  }
}
