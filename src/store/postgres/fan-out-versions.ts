import type { Subscription } from "../../domain/model.js";

/**
 * The version of its row each subscription was read at, by fan-out reads
 * (PostgresSubscriptionStore.listEnabledForEvent): PostgreSQL's `xmin`, the
 * transaction that last wrote the row, which every write of it changes.
 * With them, an insert of the notifications fanned out from a read checks,
 * in its own statement, that the subscriptions read are still the enabled
 * ones of their client and event, each as it was read (PostgresJobStore's
 * checked inserts): a fan-out kept by this instance (FanOutCache) is then
 * safe on a database other instances write to.
 */
const versions = new WeakMap<Subscription, string>();

export function recordVersion(subscription: Subscription, xmin: string): void {
  versions.set(subscription, xmin);
}

/**
 * The print of a fan-out (the subscriptions of one client and event), as
 * CURRENT_FAN_OUT_PRINT computes it from the table; undefined for none, or
 * when one of them was not brought by a fan-out read.
 */
export function fanOutPrint(subscriptions: readonly Subscription[]): string | undefined {
  if (subscriptions.length === 0) return undefined;
  const entries: string[] = [];
  for (const subscription of subscriptions) {
    const version = versions.get(subscription);
    if (version === undefined) return undefined;
    entries.push(`${subscription.id}:${version}`);
  }
  // Ids are ASCII: JavaScript's order is the "C" collation's.
  return entries.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join(",");
}

/** SQL: the print of the enabled subscriptions of client `client` and event `event` (SQL expressions), NULL for none. */
export function currentFanOutPrint(client: string, event: string): string {
  return `(SELECT string_agg(s.id || ':' || s.xmin::text, ',' ORDER BY s.id || ':' || s.xmin::text COLLATE "C")
           FROM wh_subscriptions s WHERE s.client_id = ${client} AND s.event = ${event} AND s.enabled)`;
}
