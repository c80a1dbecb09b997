import { type Client, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { ClientService } from "../../src/gen/webhooks/v1/client_service_pb.js";
import { DeliveryService } from "../../src/gen/webhooks/v1/delivery_service_pb.js";
import { EventService } from "../../src/gen/webhooks/v1/event_service_pb.js";
import { SubscriptionService } from "../../src/gen/webhooks/v1/subscription_service_pb.js";

/**
 * The credentials live in sessionStorage only: gone when the tab closes, never
 * in a URL or a cookie, and sent as `Authorization: Bearer` by the transport.
 */
const API_KEY = "webhooks.apiKey";
const ADMIN_TOKEN = "webhooks.adminToken";

export type Role = "subscriber" | "operator";

const storageKey = (role: Role) => (role === "subscriber" ? API_KEY : ADMIN_TOKEN);

export const credentials = {
  get: (role: Role): string | null => sessionStorage.getItem(storageKey(role)),
  set: (role: Role, value: string) => sessionStorage.setItem(storageKey(role), value),
  clear: (role: Role) => sessionStorage.removeItem(storageKey(role)),
};

function bearer(role: Role): Interceptor {
  return (next) => (req) => {
    const secret = credentials.get(role);
    // A call that brings its own credential (the sign-in check) keeps it.
    if (secret && !req.header.has("authorization")) req.header.set("authorization", `Bearer ${secret}`);
    return next(req);
  };
}

/** The Connect protocol over fetch, to this same origin: the service that served the page. */
const transport = (role: Role) => createConnectTransport({ baseUrl: window.location.origin, interceptors: [bearer(role)] });

const subscriber = transport("subscriber");
const operator = transport("operator");

export const subscriptions: Client<typeof SubscriptionService> = createClient(SubscriptionService, subscriber);
export const deliveries: Client<typeof DeliveryService> = createClient(DeliveryService, subscriber);
export const events: Client<typeof EventService> = createClient(EventService, operator);
export const clients: Client<typeof ClientService> = createClient(ClientService, operator);

/**
 * One cheap call with the credential before it is kept: a wrong key is refused
 * on the sign-in form, not in every panel after it. Resolves, or throws the
 * service's answer.
 */
export async function checkCredential(role: Role, secret: string): Promise<void> {
  const headers = { authorization: `Bearer ${secret}` };
  if (role === "subscriber") await subscriptions.listSubscriptions({ pageSize: 1 }, { headers });
  else await events.listEventTypes({}, { headers });
}

/** The server's own words for a failed call (its validation messages are written for people). */
export function messageOf(error: unknown): string {
  if (error instanceof ConnectError) return error.rawMessage;
  return error instanceof Error ? error.message : String(error);
}
