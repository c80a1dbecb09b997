import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import type { ClientAccess } from "../domain/client-access.js";
import type { ClientDirectory } from "../domain/clients.js";
import type { DeliveryStats } from "../domain/delivery-stats.js";
import type { DeliveryWatches } from "../domain/delivery-watch.js";
import type { EventCatalog } from "../domain/event-catalog.js";
import type { Notifications } from "../domain/notifications.js";
import type { RelayAnswers } from "../domain/relay.js";
import type { Subscriptions } from "../domain/subscriptions.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import * as v1 from "../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { ClientService } from "../gen/webhooks/v1/client_service_pb.js";
import { DeliveryService } from "../gen/webhooks/v1/delivery_service_pb.js";
import { EventService } from "../gen/webhooks/v1/event_service_pb.js";
import { SubscriptionService } from "../gen/webhooks/v1/subscription_service_pb.js";
import type { RecentDeliveries } from "../observability/recent-deliveries.js";
import { createAdminAuthInterceptor, createClientAuthInterceptor } from "./interceptors/auth.js";
import { AuthFailureLimiter, createAuthFailureLimitInterceptor } from "./interceptors/auth-failure-limit.js";
import { createRateLimitInterceptor, type RateLimit } from "./interceptors/rate-limit.js";
import { createClientService } from "./services/client-service.js";
import { createDeliveryService } from "./services/delivery-service.js";
import { createEventService, type JobCountsSource } from "./services/event-service.js";
import { createHealthService, type HealthServiceOptions } from "./services/health-service.js";
import { createReflectionV1, createReflectionV1alpha, REFLECTION_SERVICES, ReflectionIndex } from "./services/reflection-service.js";
import { createSubscriptionService } from "./services/subscription-service.js";
import { createEdgeRefusalInterceptor } from "./transport/edge-facts.js";

export interface ApiDeps {
  directory: ClientDirectory;
  /** Ends streams whose key no longer holds. */
  access: ClientAccess;
  catalog: EventCatalog;
  subscriptions: Subscriptions;
  notifications: Notifications;
  /** Live delivery streams. */
  watches: DeliveryWatches;
  /** The last hour of deliveries, for the operator's dashboard. */
  recentDeliveries: RecentDeliveries;
  /** Delivery figures from the store (every instance's). */
  stats: DeliveryStats;
  /** The delivery queue's counts (every instance's jobs). */
  jobQueue: JobCountsSource;
  /** Listeners' answers to relay requests. */
  relayAnswers: RelayAnswers;
  adminToken: string | undefined;
  /** Per-caller limit; undefined: none. */
  rateLimit: RateLimit | undefined;
  /** Failed authentications a source address may make per minute; undefined: no limit. */
  authFailuresPerMinute?: number | undefined;
  /** What grpc.health.v1 reports (see health-service.ts). */
  health: Omit<HealthServiceOptions, "services">;
}

/** The API's services; the REST gateway reads their annotations. */
export const SERVICES = [SubscriptionService, DeliveryService, EventService, ClientService] as const;

/** Every service the port serves: the API's, health and server reflection (these two need no credentials). */
export const ALL_SERVICES = [...SERVICES, Health, ...REFLECTION_SERVICES] as const;

/**
 * `common` (tracing, logging, metrics, error mapping) wraps every service; inside it the
 * edge's refusal (see edge-facts.ts) comes first, then the failed-auth limit
 * per source address (one budget for both kinds of credential), then each
 * service's own authentication. Health and reflection get `common` only:
 * probes and tools call them without credentials. Connect replaces router-level
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
  const reflection = new ReflectionIndex(ALL_SERVICES);
  const open = { interceptors: common };
  return (router) => {
    router.service(SubscriptionService, createSubscriptionService(deps), asClient);
    router.service(DeliveryService, createDeliveryService(deps), asClient);
    router.service(EventService, createEventService(deps), asAdmin);
    router.service(ClientService, createClientService(deps), asAdmin);
    router.service(Health, createHealthService({ ...deps.health, services: ALL_SERVICES.map((service) => service.typeName) }), open);
    router.service(v1.ServerReflection, createReflectionV1(reflection), open);
    router.service(v1alpha.ServerReflection, createReflectionV1alpha(reflection), open);
  };
}
