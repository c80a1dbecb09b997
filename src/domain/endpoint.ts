/**
 * The endpoint a delivery goes to, for fairness: the client and the origin
 * (scheme, host, port) of the subscription's URL.
 *
 * By origin, because what hangs or slows down is a server, and a client's
 * subscriptions to one server share its slots (fifty subscriptions to one
 * hung host hold one endpoint's slots, not fifty). By client too, because
 * receivers are often shared services: one tenant's flood to a shared host
 * must not use up the slots another tenant's deliveries to it need.
 */
export function endpointOf(clientId: string, url: string): string {
  let origin: string;
  try {
    origin = new URL(url).origin;
  } catch {
    // Never stored for a subscription, which validates its URL; keeps the key total anyway.
    origin = url;
  }
  return `${clientId} ${origin}`;
}
