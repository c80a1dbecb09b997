import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import type { ClientDirectory } from "../domain/clients.js";
import type { DeliveryWatches } from "../domain/delivery-watch.js";
import type { EventCatalog } from "../domain/event-catalog.js";
import type { Notifications } from "../domain/notifications.js";
import type { RelayAnswers } from "../domain/relay.js";
import type { Subscriptions } from "../domain/subscriptions.js";
import { ClientService } from "../gen/webhooks/v1/client_service_pb.js";
import { DeliveryService } from "../gen/webhooks/v1/delivery_service_pb.js";
import { EventService } from "../gen/webhooks/v1/event_service_pb.js";
import { SubscriptionService } from "../gen/webhooks/v1/subscription_service_pb.js";
import { AuthFailureLimiter, createAuthFailureLimitInterceptor } from "./auth-failure-limit.js";
import { createClientService } from "./client-service.js";
import { createDeliveryService } from "./delivery-service.js";
import { createEdgeRefusalInterceptor } from "./edge-facts.js";
import { createEventService } from "./event-service.js";
import { createAdminAuthInterceptor, createClientAuthInterceptor } from "./interceptors.js";
import { createRateLimitInterceptor, type RateLimit } from "./rate-limit.js";
import { createSubscriptionService } from "./subscription-service.js";

export interface ApiDeps {
  directory: ClientDirectory;
  catalog: EventCatalog;
  subscriptions: Subscriptions;
  notifications: Notifications;
  /** Live delivery streams. */
  watches: DeliveryWatches;
  /** Listeners' answers to relay requests. */
  relayAnswers: RelayAnswers;
  adminToken: string | undefined;
  /** Per-caller limit; undefined: none. */
  rateLimit: RateLimit | undefined;
  /** Failed authentications a source address may make per minute; undefined: no limit. */
  authFailuresPerMinute?: number | undefined;
}

/** Every service the port serves; the REST gateway reads their annotations. */
export const SERVICES = [SubscriptionService, DeliveryService, EventService, ClientService] as const;

/**
 * `common` (logging, error mapping) wraps every service; inside it the
 * edge's refusal (see edge-facts.ts) comes first, then the failed-auth limit
 * per source address (one budget for both kinds of credential), then each
 * service's own authentication. Connect replaces router-level
 * interceptors with service-level ones, so both are listed here.
 */
export function createRoutes(deps: ApiDeps, common: Interceptor[]): (router: ConnectRouter) => void {
  const limited = deps.rateLimit ? [createRateLimitInterceptor(deps.rateLimit)] : [];
  const refusal = createEdgeRefusalInterceptor();
  const failures = deps.authFailuresPerMinute
    ? [createAuthFailureLimitInterceptor(new AuthFailureLimiter(deps.authFailuresPerMinute))]
    : [];
  const asClient = { interceptors: [...common, refusal, ...failures, createClientAuthInterceptor(deps.directory), ...limited] };
  const asAdmin = { interceptors: [...common, refusal, ...failures, createAdminAuthInterceptor(deps.adminToken), ...limited] };
  return (router) => {
    router.service(SubscriptionService, createSubscriptionService(deps), asClient);
    router.service(DeliveryService, createDeliveryService(deps), asClient);
    router.service(EventService, createEventService(deps), asAdmin);
    router.service(ClientService, createClientService(deps), asAdmin);
  };
}
