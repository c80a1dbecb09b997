import { CATALOG_EVENTS, type CatalogPayloads } from "./catalog.generated.js";
import type { VerifiedNotification } from "./verify.js";

/** An event name of the service's built-in catalog. */
export type CatalogEvent = keyof CatalogPayloads;

/** A verified notification of a catalog event, its payload typed: a union discriminated by `event`. */
export type CatalogNotification<Event extends CatalogEvent = CatalogEvent> = {
  [Name in Event]: VerifiedNotification<Name, CatalogPayloads[Name]>;
}[Event];

const catalogEvents: ReadonlySet<string> = new Set(CATALOG_EVENTS);

/**
 * Narrows a notification to one catalog event (or, without `event`, to any of
 * them), typing its payload. It checks the event name only: the types
 * describe what the catalog promises, they do not validate the payload.
 */
export function isCatalogEvent<Event extends CatalogEvent>(
  notification: VerifiedNotification,
  event?: Event,
): notification is CatalogNotification<Event> {
  return event === undefined ? catalogEvents.has(notification.event) : notification.event === event;
}

export type * from "./catalog.generated.js";
export { CATALOG_EVENTS, type CatalogPayloads } from "./catalog.generated.js";
