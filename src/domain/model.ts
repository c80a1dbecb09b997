/** Plain domain records, shared by the services and the store port. */

export type JsonObject = { [key: string]: JsonValue };
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

export interface Client {
  id: string;
  name: string;
  createdAt: Date;
  /** Its own retention of ended notifications; absent: the service's (RETENTION). */
  retentionMs?: number;
  /** Its own subscription quota; absent: the service's (MAX_SUBSCRIPTIONS_PER_CLIENT). */
  maxSubscriptions?: number;
  /** Set while an operator has it disabled, with why. */
  disabled?: { at: Date; reason: string };
}

/** A client's own limits as an update gives them: undefined leaves one as it is, null returns it to the service's. */
export interface ClientLimitChanges {
  retentionMs?: number | null;
  maxSubscriptions?: number | null;
}

/** An API key as stored: only its hash. */
export interface ApiKeyRecord {
  id: string;
  clientId: string;
  keyHash: string;
  createdAt: Date;
  /** What it is for; may be empty. */
  name: string;
  /** When a call last authenticated with it, to within about a minute. */
  lastUsedAt?: Date;
  revokedAt?: Date;
}

/** An event type clients may subscribe to and services may publish. */
export interface EventType {
  /** `<Entity>.<Event>`, for example `Order.Created`. */
  name: string;
  description: string;
  /** Event-specific fields of the sample notification. */
  samplePayload: JsonObject;
  /** JSON Schema that published payloads must satisfy. */
  jsonSchema?: JsonObject;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * How deliveries are signed: `RSA_SHA256` is the specification's
 * `X-Signature`; `STANDARD_WEBHOOKS` signs as standardwebhooks.com says, with
 * a symmetric `whsec_` secret (`v1`), and `STANDARD_WEBHOOKS_ED25519` with an
 * Ed25519 key (`v1a`). Chosen when a subscription is created.
 */
export type SignatureScheme = "RSA_SHA256" | "STANDARD_WEBHOOKS" | "STANDARD_WEBHOOKS_ED25519";

export interface Subscription {
  id: string;
  clientId: string;
  event: string;
  url: string;
  description: string;
  enabled: boolean;
  signatureScheme: SignatureScheme;
  /**
   * Stored in the clear. RSA_SHA256: the SPKI PEM handed to the subscriber to
   * verify `X-Signature`. STANDARD_WEBHOOKS_ED25519: the `whpk_` public key.
   * STANDARD_WEBHOOKS: the secret's fingerprint (the secret is the verifying
   * key, so it is kept sealed in `privateKeyPem`).
   */
  publicKeyPem: string;
  /**
   * Sealed with AES-256-GCM (see key-sealing.ts). RSA_SHA256 and
   * STANDARD_WEBHOOKS_ED25519: the PKCS#8 PEM, which never leaves the service.
   * STANDARD_WEBHOOKS: the `whsec_` secret, shown to its owner only.
   */
  privateKeyPem: string;
  /** During a key rotation: the pair that takes over at `rotationDeadline` or on confirmation. */
  nextPublicKeyPem?: string;
  nextPrivateKeyPem?: string;
  rotationDeadline?: Date;
  /** The first failed attempt since the last success. */
  failingSince?: Date;
  /** When the client was told of this failure streak (Subscription.Failing); cleared with the streak. */
  failingNoticedAt?: Date;
  /** Why and when it was disabled (by its owner or automatically). */
  disabledReason?: string;
  disabledAt?: Date;
  /** Most deliveries per second across every instance; absent: no limit (see delivery/fairness/throttle.ts). */
  rateLimitPerSecond?: number;
  /** Headers sent with every delivery, as one JSON object sealed like the private keys (see custom-headers.ts); absent: none. */
  sealedHeaders?: string;
  /** Which notifications it takes (see payload-filter.ts); absent: every one. */
  filter?: JsonObject;
  /** A temporary relay subscription's lease (see relay-leases.ts): deleted once it passes. Absent on every other. */
  leaseExpiresAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}

export type NotificationStatus = "pending" | "delivered" | "failed";
/** The statuses a notification ends in: no attempt follows. */
export type FinalStatus = Exclude<NotificationStatus, "pending">;

/** The error of the last attempt of a notification whose subscription went away before it was delivered. */
export const SUBSCRIPTION_DELETED = "subscription was deleted";

/** One notification job: a fixed body delivered to one subscription. */
export interface Notification {
  /** Sent as `X-JobId` on every attempt. */
  id: string;
  subscriptionId: string;
  clientId: string;
  event: string;
  /** The exact bytes (UTF-8) that every attempt sends and signs. */
  body: string;
  status: NotificationStatus;
  /** Attempts made so far; the next attempt's `X-JobAttempt` equals it. */
  attemptCount: number;
  /** On a redelivery: the job id it repeats. */
  redeliveryOf?: string;
  createdAt: Date;
  updatedAt: Date;
}

/** What one delivery attempt observed. */
export interface DeliveryAttempt {
  notificationId: string;
  /** `X-JobAttempt`: 0 for the first delivery, then 1..maxRetries. */
  attempt: number;
  startedAt: Date;
  durationMs: number;
  /** HTTP status, absent when no response arrived. */
  statusCode?: number;
  /** The first bytes of the response body. */
  responseBody?: string;
  /** Why the attempt failed without a usable response (timeout, refused…). */
  error?: string;
  succeeded: boolean;
}
