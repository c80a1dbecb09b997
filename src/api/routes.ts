import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import type { ClientDirectory } from "../domain/clients.js";
import type { EventCatalog } from "../domain/event-catalog.js";
import type { Notifications } from "../domain/notifications.js";
import type { Subscriptions } from "../domain/subscriptions.js";
import { SubscriptionService } from "../gen/webhooks/v1/subscription_service_pb.js";
import { createClientAuthInterceptor } from "./interceptors.js";
import { createSubscriptionService } from "./subscription-service.js";

export interface ApiDeps {
  directory: ClientDirectory;
  catalog: EventCatalog;
  subscriptions: Subscriptions;
  notifications: Notifications;
}

/** Every service the port serves; the REST gateway reads their annotations. */
export const SERVICES = [SubscriptionService] as const;

/**
 * `common` (logging, error mapping) wraps every service; each service adds
 * its own authentication inside it. Connect replaces router-level
 * interceptors with service-level ones, so both are listed here.
 */
export function createRoutes(deps: ApiDeps, common: Interceptor[]): (router: ConnectRouter) => void {
  const clientAuth = createClientAuthInterceptor(deps.directory);
  return (router) => {
    router.service(SubscriptionService, createSubscriptionService(deps), { interceptors: [...common, clientAuth] });
  };
}
