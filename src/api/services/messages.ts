import { create } from "@bufbuild/protobuf";
import { durationFromMs, type Timestamp, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ActivityKind, DeliveryActivity } from "../../domain/delivery-activity.js";
import { ValidationError } from "../../domain/errors.js";
import type {
  Client,
  DeliveryAttempt,
  EventType,
  Notification,
  NotificationStatus,
  SignatureScheme,
  Subscription,
} from "../../domain/model.js";
import type { SignatureKeys } from "../../domain/subscriptions.js";
import { type Client as ClientMessage, ClientSchema } from "../../gen/webhooks/v1/client_service_pb.js";
import {
  DeliveryActivityKind as ActivityKindMessage,
  type DeliveryActivity as DeliveryActivityMessage,
  DeliveryActivitySchema,
  type DeliveryAttempt as DeliveryAttemptMessage,
  DeliveryAttemptSchema,
  type Notification as NotificationMessage,
  NotificationSchema,
  NotificationStatus as Status,
} from "../../gen/webhooks/v1/delivery_service_pb.js";
import {
  type EventType as EventTypeMessage,
  EventTypeSchema,
  SignatureScheme as Scheme,
  type Subscription as SubscriptionMessage,
  SubscriptionSchema,
} from "../../gen/webhooks/v1/subscription_pb.js";

/** Domain records → API messages: the one place field names are mapped. */

const timestamp = (date: Date | undefined): Timestamp | undefined => (date ? timestampFromDate(date) : undefined);

const SCHEME_TO_MESSAGE: Record<SignatureScheme, Scheme> = {
  RSA_SHA256: Scheme.RSA_SHA256,
  STANDARD_WEBHOOKS: Scheme.STANDARD_WEBHOOKS,
  STANDARD_WEBHOOKS_ED25519: Scheme.STANDARD_WEBHOOKS_ED25519,
};

/** The scheme a request asks for; undefined for the default. A number no scheme has (gRPC sends any) is refused. */
export function schemeFromMessage(scheme: Scheme): SignatureScheme | undefined {
  if (scheme === Scheme.UNSPECIFIED) return undefined;
  const found = (Object.entries(SCHEME_TO_MESSAGE) as [SignatureScheme, Scheme][]).find(([, value]) => value === scheme)?.[0];
  if (!found) {
    throw new ValidationError(
      `signatureScheme ${scheme} is not a signature scheme; use one of ${Object.keys(SCHEME_TO_MESSAGE).join(", ")}`,
      "signatureScheme",
    );
  }
  return found;
}

/** `keys` are the ones the owner verifies with (Subscriptions.signatureKeys); `headers`, as shown (Subscriptions.shownHeaders). */
export function toSubscriptionMessage(s: Subscription, keys: SignatureKeys, headers: Record<string, string>): SubscriptionMessage {
  return create(SubscriptionSchema, {
    id: s.id,
    event: s.event,
    url: s.url,
    description: s.description,
    signatureScheme: SCHEME_TO_MESSAGE[s.signatureScheme],
    signatureKey: keys.signatureKey,
    enabled: s.enabled,
    createdAt: timestamp(s.createdAt),
    updatedAt: timestamp(s.updatedAt),
    nextSignatureKey: keys.nextSignatureKey ?? "",
    rotationDeadline: timestamp(s.rotationDeadline),
    failingSince: timestamp(s.failingSince),
    disabledReason: s.disabledReason ?? "",
    disabledAt: timestamp(s.disabledAt),
    rateLimitPerSecond: s.rateLimitPerSecond ?? 0,
    headers,
    ...(s.filter ? { filter: s.filter } : {}),
    leaseExpiresAt: timestamp(s.leaseExpiresAt),
  });
}

export function toEventTypeMessage(type: EventType): EventTypeMessage {
  return create(EventTypeSchema, {
    name: type.name,
    description: type.description,
    samplePayload: type.samplePayload,
    ...(type.jsonSchema ? { jsonSchema: type.jsonSchema } : {}),
  });
}

const STATUS_TO_MESSAGE: Record<NotificationStatus, Status> = {
  pending: Status.PENDING,
  delivered: Status.DELIVERED,
  failed: Status.FAILED,
};

export function statusFromMessage(status: Status): NotificationStatus | undefined {
  return (Object.entries(STATUS_TO_MESSAGE) as [NotificationStatus, Status][]).find(([, value]) => value === status)?.[0];
}

export function toAttemptMessage(a: DeliveryAttempt): DeliveryAttemptMessage {
  return create(DeliveryAttemptSchema, {
    attempt: a.attempt,
    startedAt: timestamp(a.startedAt),
    durationMs: a.durationMs,
    statusCode: a.statusCode ?? 0,
    responseBody: a.responseBody ?? "",
    error: a.error ?? "",
    succeeded: a.succeeded,
  });
}

export function toNotificationMessage(n: Notification, attempts: DeliveryAttempt[] = []): NotificationMessage {
  return create(NotificationSchema, {
    id: n.id,
    subscriptionId: n.subscriptionId,
    event: n.event,
    body: n.body,
    status: STATUS_TO_MESSAGE[n.status],
    attemptCount: n.attemptCount,
    createdAt: timestamp(n.createdAt),
    updatedAt: timestamp(n.updatedAt),
    redeliveryOf: n.redeliveryOf ?? "",
    attempts: attempts.map(toAttemptMessage),
  });
}

export function toClientMessage(c: Client): ClientMessage {
  return create(ClientSchema, {
    id: c.id,
    name: c.name,
    createdAt: timestamp(c.createdAt),
    ...(c.retentionMs === undefined ? {} : { retention: durationFromMs(c.retentionMs) }),
    maxSubscriptions: c.maxSubscriptions ?? 0,
    ...(c.disabled ? { disabledAt: timestamp(c.disabled.at), disabledReason: c.disabled.reason } : {}),
  });
}

const KIND_TO_MESSAGE: Record<ActivityKind, ActivityKindMessage> = {
  accepted: ActivityKindMessage.ACCEPTED,
  "attempt-started": ActivityKindMessage.ATTEMPT_STARTED,
  "attempt-finished": ActivityKindMessage.ATTEMPT_FINISHED,
  delivered: ActivityKindMessage.DELIVERED,
  failed: ActivityKindMessage.FAILED,
  "subscription-disabled": ActivityKindMessage.SUBSCRIPTION_DISABLED,
  "relay-request": ActivityKindMessage.RELAY_REQUEST,
  throttled: ActivityKindMessage.THROTTLED,
};

export function toActivityMessage(activity: DeliveryActivity): DeliveryActivityMessage {
  return create(DeliveryActivitySchema, {
    kind: KIND_TO_MESSAGE[activity.kind],
    occurredAt: timestampFromDate(activity.at),
    jobId: activity.jobId,
    subscriptionId: activity.subscriptionId,
    clientId: activity.clientId,
    event: activity.event,
    attempt: activity.attempt ?? 0,
    statusCode: activity.statusCode ?? 0,
    durationMs: activity.durationMs ?? 0,
    error: activity.error ?? "",
    succeeded: activity.succeeded ?? false,
    status: activity.status ? STATUS_TO_MESSAGE[activity.status] : Status.UNSPECIFIED,
    reason: activity.reason ?? "",
    replayed: activity.replayed ?? false,
    body: activity.body ?? "",
    headers: activity.headers ?? {},
    ...(activity.nextAttemptAt ? { nextAttemptAt: timestampFromDate(activity.nextAttemptAt) } : {}),
  });
}
