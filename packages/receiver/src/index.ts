export { httpReceiver } from "./adapters/node-http.js";
export { type AdapterOptions, DEFAULT_MAX_BODY_BYTES, type ReceiverOrOptions, readRawBody } from "./adapters/raw-body.js";
export * from "./catalog.js";
export {
  BodyTooLargeError,
  InvalidSignatureError,
  MalformedBodyError,
  MalformedHeaderError,
  MissingHeaderError,
  StaleTimestampError,
  WebhookVerificationError,
} from "./errors.js";
export { DEFAULT_TOLERANCE_MS, MAX_CLOCK_SKEW_MS, SIGNED_SEND_TIME_TOLERANCE_MS, type Tolerance } from "./freshness.js";
export type { HeadersInput } from "./headers.js";
export type { KeyInput } from "./keys.js";
export type { JsonValue, Payload } from "./notification.js";
export {
  createReceiver,
  DEFAULT_LEASE_MS,
  type ErrorContext,
  IN_PROGRESS_RETRY_AFTER_SECONDS,
  type RawRequest,
  type Receiver,
  type ReceiverOptions,
  type ReceiverResponse,
} from "./receiver.js";
export { SCHEMES, type SchemeName, type SchemeResult, type SignatureScheme } from "./schemes/index.js";
export { WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from "./schemes/standard-webhooks.js";
export { JOB_ATTEMPT_HEADER, JOB_ID_HEADER, MAX_ATTEMPT, SIGNATURE_HEADER } from "./schemes/x-signature.js";
export type { ClaimResult, SeenStore } from "./seen-store.js";
export { MemorySeenStore, type MemorySeenStoreOptions } from "./seen-stores/memory.js";
export { DEFAULT_TABLE, PostgresSeenStore, type PostgresSeenStoreOptions, type SqlClient, seenTableDdl } from "./seen-stores/postgres.js";
export { type VerifiedNotification, type VerifyOptions, verifyNotification } from "./verify.js";
