import test from "ava";
import { ConfigError, loadConfig } from "../src/config.js";

test("defaults: embedded PGlite under ./data on port 8080, strict targets", (t) => {
  const config = loadConfig({});
  t.is(config.port, 8080);
  t.deepEqual(config.store, { kind: "embedded", dataDir: `${process.cwd()}/data` });
  t.false(config.allowPrivateTargets);
  t.false(config.allowHttpTargets);
  t.is(config.retryPolicy.delaysMs.length, 5);
  t.is(config.deliveryTimeoutMs, 15_000);
  t.is(config.retentionMs, 30 * 86_400_000);
  t.is(config.maxSubscriptionsPerClient, 100);
  t.is(loadConfig({ RETENTION: "1s" }).retentionMs, 1_000, "a second is the shortest");
});

const SIGNING_MASTER_KEY = "ab".repeat(32);

test("DATABASE_URL picks the adapter by scheme", (t) => {
  t.is(loadConfig({ SIGNING_MASTER_KEY, DATABASE_URL: "postgres://u@h/db" }).store.kind, "postgres");
  t.is(loadConfig({ SIGNING_MASTER_KEY, DATABASE_URL: "postgresql://u@h/db" }).store.kind, "postgres");
  t.deepEqual(loadConfig({ SIGNING_MASTER_KEY, DATABASE_URL: "mongodb://h/db" }).store, {
    kind: "mongodb",
    url: "mongodb://h/db",
    changeStreams: false,
  });
  t.throws(() => loadConfig({ DATABASE_URL: "mysql://h/db" }), { instanceOf: ConfigError, message: /postgres:\/\/.*mongodb:\/\// });
});

test("a database server needs SIGNING_MASTER_KEY; the embedded store may go without", (t) => {
  t.throws(() => loadConfig({ DATABASE_URL: "postgres://u@h/db" }), { message: /SIGNING_MASTER_KEY is required/ });
  t.throws(() => loadConfig({ SIGNING_MASTER_KEY: "too-short" }), { message: /32 bytes/ });
  t.is(loadConfig({}).signingMasterKey, undefined);
  t.is(loadConfig({ SIGNING_MASTER_KEY }).signingMasterKey?.length, 32);
  t.is(loadConfig({ SIGNING_MASTER_KEY: Buffer.alloc(32, 7).toString("base64") }).signingMasterKey?.length, 32);
});

test("bad settings name the variable", (t) => {
  t.throws(() => loadConfig({ PORT: "http" }), { message: /PORT must be an integer/ });
  t.throws(() => loadConfig({ RETRY_SCHEDULE: "1s,soon" }), { message: /RETRY_SCHEDULE: not a duration/ });
  t.throws(() => loadConfig({ ALLOW_PRIVATE_TARGETS: "maybe" }), { message: /ALLOW_PRIVATE_TARGETS must be true or false/ });
  t.throws(() => loadConfig({ SIGNING_KEY_BITS: "1024" }), { message: /SIGNING_KEY_BITS/ });
  t.throws(() => loadConfig({ BOOTSTRAP_API_KEY: "short" }), { message: /at least 16/ });
  t.throws(() => loadConfig({ EVENT_CATALOG_FILE: "/nonexistent.json" }), { message: /EVENT_CATALOG_FILE/ });
  t.throws(() => loadConfig({ AUTH_FAILURES_PER_MINUTE: "lots" }), { message: /AUTH_FAILURES_PER_MINUTE must be an integer/ });
  t.throws(() => loadConfig({ RETENTION: "a month" }), { message: /RETENTION: not a duration/ });
  t.throws(() => loadConfig({ RETENTION: "999ms" }), { message: /RETENTION must be from 1s to 36500d, got "999ms"/ });
  t.throws(() => loadConfig({ MAX_SUBSCRIPTIONS_PER_CLIENT: "0" }), { message: /MAX_SUBSCRIPTIONS_PER_CLIENT must be an integer from 1/ });
  t.throws(() => loadConfig({ LOG_LEVEL: "verbose" }), {
    message: /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/,
  });
  t.throws(() => loadConfig({ HOST: "not a host!" }), { message: /HOST must be an IP address or a host name/ });
  // Checked with the embedded store too, where they do not apply.
  t.throws(() => loadConfig({ MONGODB_CHANGE_STREAMS: "maybe" }), { message: /MONGODB_CHANGE_STREAMS must be true or false/ });
  t.throws(() => loadConfig({ DATABASE_POOL_SIZE: "0" }), { message: /DATABASE_POOL_SIZE must be an integer/ });
  t.is(loadConfig({ HOST: "::1", LOG_LEVEL: "warn" }).logLevel, "warn");
  t.is(loadConfig({ HOST: "localhost" }).host, "localhost");
});

test("metrics are on by default, optionally behind a token; tracing is on once an OTLP endpoint is named", (t) => {
  const defaults = loadConfig({});
  t.deepEqual(defaults.metrics, { enabled: true });
  t.is(defaults.tracing, undefined);
  t.false(defaults.propagateTraceContext);
  t.deepEqual(loadConfig({ METRICS_ENABLED: "false", METRICS_TOKEN: "scrape-token-0123456789" }).metrics, {
    enabled: false,
    token: "scrape-token-0123456789",
  });
  t.throws(() => loadConfig({ METRICS_TOKEN: "short" }), { message: /METRICS_TOKEN must be at least 16/ });
  t.throws(() => loadConfig({ METRICS_ENABLED: "sometimes" }), { message: /METRICS_ENABLED must be true or false/ });
  t.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).tracing, {
    tracesUrl: "http://collector:4318/v1/traces",
    serviceName: "webhook-notification-service",
  });
  t.deepEqual(
    loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/otlp",
      OTEL_SERVICE_NAME: "webhooks-eu",
    }).tracing,
    { tracesUrl: "https://traces.example/otlp", serviceName: "webhooks-eu" },
  );
  t.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }), { message: /OTEL_EXPORTER_OTLP_ENDPOINT must be an http/ });
  t.true(loadConfig({ PROPAGATE_TRACE_CONTEXT: "true" }).propagateTraceContext);
});
