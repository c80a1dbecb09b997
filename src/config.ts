import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { resolve } from "node:path";
import { DEFAULT_CATALOG } from "./domain/default-catalog.js";
import { type EventTypeDefinition, parseCatalog } from "./domain/event-catalog.js";
import { parseMasterKey } from "./domain/key-sealing.js";
import { RELAY_LEASE_MS } from "./domain/relay-leases.js";
import { checkRetention } from "./domain/retention.js";
import { DEFAULT_RETRY_SCHEDULE, parseDuration, parseRetrySchedule, type RetryPolicy } from "./domain/retry-policy.js";
import type { StoreConfig } from "./store/open-store.js";

/** Everything the service reads from its environment, validated once. */
export interface Config {
  port: number;
  host: string;
  logLevel: string;
  store: StoreConfig;
  /** Ensures a client holding this key exists at start (dev, demos, tests). */
  bootstrapApiKey?: string;
  /** Guards the internal (admin) APIs. */
  adminToken?: string;
  catalog: readonly EventTypeDefinition[];
  retryPolicy: RetryPolicy;
  deliveryTimeoutMs: number;
  maxResponseBytes: number;
  maxBodyBytes: number;
  /** Largest notification body a publish may produce. */
  maxPayloadBytes: number;
  /** Failing this long disables a subscription; undefined: never. */
  autoDisableAfterMs?: number;
  /** A failure streak this long is told to the client once (Subscription.Failing); undefined: never. */
  failingNoticeAfterMs?: number;
  /** How long the old signing key keeps signing after a rotation starts. */
  keyRotationGraceMs: number;
  /** Per-caller API rate limit; undefined: none. */
  rateLimit?: { perSecond: number; burst: number };
  /** Failed authentications a source address may make per minute; undefined: no limit. */
  authFailuresPerMinute?: number;
  allowPrivateTargets: boolean;
  allowHttpTargets: boolean;
  signingKeyBits: number;
  /** AES-256 key sealing private signing keys; unset only for the embedded store (a key is kept under DATA_DIR). */
  signingMasterKey?: Buffer;
  schedulerPollMs: number;
  deliveryConcurrency: number;
  /** Requests in flight per endpoint (client and URL origin) and per client, in one instance. */
  deliveryLimits: { perEndpoint: number; perClient: number };
  shutdownGraceMs: number;
  /** GET /metrics; `token`, when set, must come as `Authorization: Bearer <token>`. */
  metrics: { enabled: boolean; token?: string };
  /** OTLP/HTTP trace export; undefined: tracing off. */
  tracing?: TracingConfig;
  /** Send the W3C `traceparent` of each notification's trace to its receiver. */
  propagateTraceContext: boolean;
  /** Activities a live watcher may fall behind by before it is cut off. */
  watcherBufferSize: number;
  /** How long delivered and failed notifications are kept (a client may have its own). */
  retentionMs: number;
  /** Subscriptions a client may hold (a client may have its own quota). */
  maxSubscriptionsPerClient: number;
  /** How long a temporary relay subscription outlives its listener's last stream. */
  relayLeaseMs: number;
}

export interface TracingConfig {
  /** Where spans are POSTed (OTLP/HTTP, protobuf): the traces endpoint itself. */
  tracesUrl: string;
  serviceName: string;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.toLowerCase();
  if (raw === undefined || raw === "") return fallback;
  if (["true", "1", "yes"].includes(raw)) return true;
  if (["false", "0", "no"].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(env[name])}`);
}

function storeConfig(env: Env): StoreConfig {
  const url = env.DATABASE_URL;
  // Checked whichever store is used, so that a typo never waits for the day it matters.
  const poolSize = integer(env, "DATABASE_POOL_SIZE", 10, 1, 500);
  const changeStreams = boolean(env, "MONGODB_CHANGE_STREAMS", false);
  // One name per setting: a POSTGRES_URL meant for the service would otherwise leave it on the embedded store unawares.
  if (!url && env.POSTGRES_URL) {
    throw new ConfigError(
      "POSTGRES_URL is set but DATABASE_URL is not: set DATABASE_URL=<that URL> to run on PostgreSQL, or unset POSTGRES_URL for the embedded store; POSTGRES_URL is read only by the tests",
    );
  }
  if (!url) return { kind: "embedded", dataDir: resolve(env.DATA_DIR || "./data") };
  if (/^postgres(ql)?:\/\//.test(url)) return { kind: "postgres", url, poolSize };
  if (/^mongodb(\+srv)?:\/\//.test(url)) return { kind: "mongodb", url, changeStreams };
  throw new ConfigError("DATABASE_URL must start with postgres://, postgresql:// or mongodb:// (unset: embedded PGlite under DATA_DIR)");
}

function catalog(env: Env): readonly EventTypeDefinition[] {
  const file = env.EVENT_CATALOG_FILE;
  if (!file) return DEFAULT_CATALOG;
  try {
    return parseCatalog(JSON.parse(readFileSync(file, "utf8")));
  } catch (error) {
    throw new ConfigError(`EVENT_CATALOG_FILE ${file}: ${(error as Error).message}`);
  }
}

function duration(env: Env, name: string, fallback: string): number {
  try {
    return parseDuration(env[name] || fallback);
  } catch (error) {
    throw new ConfigError(`${name}: ${(error as Error).message}`);
  }
}

function retention(env: Env): number {
  const ms = duration(env, "RETENTION", "30d");
  try {
    return checkRetention(ms, "RETENTION");
  } catch (error) {
    throw new ConfigError(`${(error as Error).message}, got ${JSON.stringify(env.RETENTION)}`);
  }
}

/** RELAY_LEASE: from a second (tests) to an hour; the default is the domain's constant. */
function relayLease(env: Env): number {
  if (!env.RELAY_LEASE) return RELAY_LEASE_MS;
  const ms = duration(env, "RELAY_LEASE", "");
  if (ms < 1_000 || ms > 3_600_000) throw new ConfigError(`RELAY_LEASE must be from 1s to 1h, got ${JSON.stringify(env.RELAY_LEASE)}`);
  return ms;
}

function retryPolicy(env: Env): RetryPolicy {
  try {
    return {
      delaysMs: parseRetrySchedule(env.RETRY_SCHEDULE || DEFAULT_RETRY_SCHEDULE),
      jitter: Number(env.RETRY_JITTER ?? "0.2"),
      maxRetryAfterMs: 24 * 3_600_000,
    };
  } catch (error) {
    throw new ConfigError(`RETRY_SCHEDULE: ${(error as Error).message}`);
  }
}

function rateLimit(env: Env): Pick<Config, "rateLimit"> {
  const perSecond = integer(env, "RATE_LIMIT_PER_SECOND", 100, 0, 1_000_000);
  if (perSecond === 0) return {};
  return { rateLimit: { perSecond, burst: integer(env, "RATE_LIMIT_BURST", 2 * perSecond, 1, 10_000_000) } };
}

function deliveryLimits(env: Env, concurrency: number): Config["deliveryLimits"] {
  const perEndpoint = integer(env, "DELIVERY_ENDPOINT_CONCURRENCY", Math.min(16, concurrency), 1, concurrency);
  const perClient = integer(env, "DELIVERY_CLIENT_CONCURRENCY", Math.max(perEndpoint, Math.ceil(concurrency / 4)), 1, concurrency);
  if (perClient < perEndpoint) {
    throw new ConfigError(
      `DELIVERY_CLIENT_CONCURRENCY (${perClient}) must be at least DELIVERY_ENDPOINT_CONCURRENCY (${perEndpoint}): a client's cap covers all its endpoints`,
    );
  }
  return { perEndpoint, perClient };
}

function authFailureLimit(env: Env): Pick<Config, "authFailuresPerMinute"> {
  const perMinute = integer(env, "AUTH_FAILURES_PER_MINUTE", 30, 0, 1_000_000);
  return perMinute === 0 ? {} : { authFailuresPerMinute: perMinute };
}

function metrics(env: Env): Config["metrics"] {
  const enabled = boolean(env, "METRICS_ENABLED", true);
  const token = env.METRICS_TOKEN || undefined;
  if (token !== undefined && token.length < 16) throw new ConfigError("METRICS_TOKEN must be at least 16 characters");
  return token ? { enabled, token } : { enabled };
}

function httpUrl(env: Env, name: string): URL | undefined {
  const raw = env[name];
  if (!raw) return undefined;
  try {
    const url = new URL(raw);
    if (url.protocol === "http:" || url.protocol === "https:") return url;
  } catch {}
  throw new ConfigError(`${name} must be an http:// or https:// URL, got ${JSON.stringify(raw)}`);
}

/** The standard OpenTelemetry variables: tracing is on once an OTLP endpoint is named. */
function tracing(env: Env): Pick<Config, "tracing"> {
  const traces = httpUrl(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = httpUrl(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  const serviceName = env.OTEL_SERVICE_NAME || "webhook-notification-service";
  if (traces) return { tracing: { tracesUrl: traces.toString(), serviceName } };
  if (!base) return {};
  // As the OTel specification says: the signal's path is appended to the base endpoint.
  return { tracing: { tracesUrl: `${base.toString().replace(/\/$/, "")}/v1/traces`, serviceName } };
}

/** pino's levels. */
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function logLevel(env: Env): string {
  const level = env.LOG_LEVEL || "info";
  if (!LOG_LEVELS.includes(level)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(level)}`);
  return level;
}

/** An IP literal or a DNS name (letters, digits, hyphens and dots). */
function host(env: Env): string {
  const value = env.HOST || "0.0.0.0";
  const dnsName = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;
  if (!isIP(value) && !dnsName.test(value))
    throw new ConfigError(`HOST must be an IP address or a host name, got ${JSON.stringify(value)}`);
  return value;
}

export function loadConfig(env: Env): Config {
  const policy = retryPolicy(env);
  if (!(policy.jitter >= 0 && policy.jitter < 1)) throw new ConfigError("RETRY_JITTER must be a number from 0 to below 1");
  const bootstrapApiKey = env.BOOTSTRAP_API_KEY || undefined;
  if (bootstrapApiKey !== undefined && bootstrapApiKey.length < 16) {
    throw new ConfigError("BOOTSTRAP_API_KEY must be at least 16 characters");
  }
  const adminToken = env.ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < 16) throw new ConfigError("ADMIN_TOKEN must be at least 16 characters");
  const signingKeyBits = integer(env, "SIGNING_KEY_BITS", 2048, 2048, 4096);
  if (signingKeyBits !== 2048 && signingKeyBits !== 3072 && signingKeyBits !== 4096) {
    throw new ConfigError("SIGNING_KEY_BITS must be 2048, 3072 or 4096");
  }
  const store = storeConfig(env);
  const deliveryConcurrency = integer(env, "DELIVERY_CONCURRENCY", 512, 1, 4096);
  const masterKeyText = env.SIGNING_MASTER_KEY;
  const signingMasterKey = masterKeyText ? parseMasterKey(masterKeyText) : undefined;
  if (masterKeyText && !signingMasterKey) {
    throw new ConfigError("SIGNING_MASTER_KEY must be 32 bytes: 64 hex characters or base64 (e.g. openssl rand -hex 32)");
  }
  if (!signingMasterKey && store.kind !== "embedded") {
    throw new ConfigError(
      "SIGNING_MASTER_KEY is required with DATABASE_URL: it encrypts the signing keys stored in the database (openssl rand -hex 32)",
    );
  }
  return {
    port: integer(env, "PORT", 8080, 0, 65535),
    host: host(env),
    logLevel: logLevel(env),
    store,
    ...(signingMasterKey ? { signingMasterKey } : {}),
    ...(bootstrapApiKey ? { bootstrapApiKey } : {}),
    ...(adminToken ? { adminToken } : {}),
    catalog: catalog(env),
    retryPolicy: policy,
    deliveryTimeoutMs: integer(env, "DELIVERY_TIMEOUT_MS", 15_000, 100, 120_000),
    maxResponseBytes: integer(env, "MAX_RESPONSE_BYTES", 4096, 0, 1_048_576),
    maxBodyBytes: integer(env, "MAX_BODY_BYTES", 1_048_576, 1024, 64 * 1_048_576),
    maxPayloadBytes: integer(env, "MAX_PAYLOAD_BYTES", 262_144, 1024, 16 * 1_048_576),
    ...(env.AUTO_DISABLE_AFTER === "off" ? {} : { autoDisableAfterMs: duration(env, "AUTO_DISABLE_AFTER", "5d") }),
    ...(env.FAILING_NOTICE_AFTER === "off" ? {} : { failingNoticeAfterMs: duration(env, "FAILING_NOTICE_AFTER", "1h") }),
    keyRotationGraceMs: duration(env, "KEY_ROTATION_GRACE", "24h"),
    ...rateLimit(env),
    ...authFailureLimit(env),
    allowPrivateTargets: boolean(env, "ALLOW_PRIVATE_TARGETS", false),
    allowHttpTargets: boolean(env, "ALLOW_HTTP_TARGETS", false),
    signingKeyBits,
    schedulerPollMs: integer(env, "SCHEDULER_POLL_MS", 1000, 50, 60_000),
    deliveryConcurrency,
    deliveryLimits: deliveryLimits(env, deliveryConcurrency),
    shutdownGraceMs: integer(env, "SHUTDOWN_GRACE_MS", 10_000, 0, 300_000),
    metrics: metrics(env),
    ...tracing(env),
    propagateTraceContext: boolean(env, "PROPAGATE_TRACE_CONTEXT", false),
    watcherBufferSize: integer(env, "WATCHER_BUFFER_SIZE", 1000, 1, 1_000_000),
    retentionMs: retention(env),
    maxSubscriptionsPerClient: integer(env, "MAX_SUBSCRIPTIONS_PER_CLIENT", 100, 1, 1_000_000),
    relayLeaseMs: relayLease(env),
  };
}
