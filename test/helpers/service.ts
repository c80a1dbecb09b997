import type { ExecutionContext, TestFn } from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { type RunningService, startService } from "../../src/service.js";
import { type StoreTarget, storeTargets } from "./stores.js";

export const API_KEY = "test-key-0123456789abcdef";
export const ADMIN_TOKEN = "test-admin-0123456789abcdef";

/** Settings that make retries fast enough for tests and allow loopback receivers. */
export const FAST_TEST_ENV: Record<string, string> = {
  PORT: "0",
  HOST: "127.0.0.1",
  BOOTSTRAP_API_KEY: API_KEY,
  ADMIN_TOKEN,
  ALLOW_PRIVATE_TARGETS: "true",
  ALLOW_HTTP_TARGETS: "true",
  RETRY_SCHEDULE: "100ms,100ms,100ms,100ms,100ms",
  RETRY_JITTER: "0",
  SCHEDULER_POLL_MS: "100",
  DELIVERY_TIMEOUT_MS: "2000",
  SHUTDOWN_GRACE_MS: "2000",
  SIGNING_KEY_BITS: "2048",
  RATE_LIMIT_PER_SECOND: "1000",
  // Tests send wrong credentials from 127.0.0.1 on purpose; the one that tests the limit sets its own.
  AUTH_FAILURES_PER_MINUTE: "0",
  SIGNING_MASTER_KEY: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
};

export interface TestService {
  service: RunningService;
  baseUrl: string;
}

/** Starts the real service in this process, on a free port. */
export async function startTestService(env: Record<string, string>): Promise<TestService> {
  const config = loadConfig({ ...FAST_TEST_ENV, ...env });
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const service = await startService(config, log);
  return { service, baseUrl: `http://127.0.0.1:${service.port}` };
}

/** The embedded store (PGlite), the one target every run has. */
function embeddedTarget(): StoreTarget {
  const target = storeTargets()[0];
  if (!target) throw new Error("no store target");
  return target;
}

/**
 * One service on embedded PGlite shared by a test file: started before its
 * tests, stopped after. Its fields are filled in by the `before` hook.
 */
export function sharedService(test: TestFn, env: Record<string, string> = {}): TestService {
  const shared = {} as TestService;
  let cleanup: (() => Promise<void>) | undefined;
  test.before(async () => {
    const store = await embeddedTarget().create();
    cleanup = store.cleanup;
    Object.assign(shared, await startTestService({ ...store.env, ...env }));
  });
  test.after.always(async () => {
    await shared.service?.stop();
    await cleanup?.();
  });
  return shared;
}

/** A service started by `serviceOn`, with the settings that name its database. */
export interface ServiceOnStore extends TestService {
  storeEnv: Record<string, string>;
}

/**
 * The real service on a new database of `target`, `env` added to its
 * settings, for the test `t`: stopped, and its database dropped, when the
 * test ends (after the teardowns registered later, such as receivers').
 */
export async function serviceOn(t: ExecutionContext, target: StoreTarget, env: Record<string, string> = {}): Promise<ServiceOnStore> {
  const store = await target.create();
  t.teardown(store.cleanup);
  const running = await startTestService({ ...store.env, ...env });
  t.teardown(() => running.service.stop());
  return { ...running, storeEnv: store.env };
}

/** One more instance of the service on the database `first` runs on (with `env`), stopped when the test `t` ends. */
export async function anotherInstance(t: ExecutionContext, first: ServiceOnStore, env: Record<string, string> = {}): Promise<TestService> {
  const running = await startTestService({ ...first.storeEnv, ...env });
  t.teardown(() => running.service.stop());
  return running;
}

/** `serviceOn` the embedded store (PGlite): for a test of the API that needs no other store. */
export function embeddedService(t: ExecutionContext, env: Record<string, string> = {}): Promise<ServiceOnStore> {
  return serviceOn(t, embeddedTarget(), env);
}

/** A JSON REST call with the test client's key unless `headers` says otherwise. */
export async function rest(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = { authorization: `Bearer ${API_KEY}` },
): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  return restAnswer(response.status, await response.text());
}

/** An answer as `rest` gives it: its status, its body as text, and as JSON where it is JSON (else `{}`). */
export function restAnswer(status: number, text: string): { status: number; json: Record<string, unknown>; text: string } {
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {}
  return { status, json, text };
}
