import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { startExpectingExit } from "./helpers/process.js";

let dir: string;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wh-config-"));
});

test.after.always(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** One bad value for every variable of the README's configuration table. */
const BAD: Array<[string, string]> = [
  ["PORT", "http"],
  ["HOST", "not a host!"],
  ["DATABASE_URL", "mysql://localhost/db"],
  ["DATA_DIR", "/dev/null/data"],
  ["MONGODB_CHANGE_STREAMS", "maybe"],
  ["BOOTSTRAP_API_KEY", "short"],
  ["ADMIN_TOKEN", "short"],
  ["EVENT_CATALOG_FILE", "/nonexistent/catalog.json"],
  ["RETRY_SCHEDULE", "1s,soon"],
  ["RETRY_JITTER", "lots"],
  ["DELIVERY_TIMEOUT_MS", "-1"],
  ["MAX_RESPONSE_BYTES", "big"],
  ["MAX_BODY_BYTES", "1e99"],
  ["MAX_PAYLOAD_BYTES", "0"],
  ["SIGNING_MASTER_KEY", "too-short"],
  ["RATE_LIMIT_PER_SECOND", "fast"],
  ["RATE_LIMIT_BURST", "-5"],
  ["AUTH_FAILURES_PER_MINUTE", "lots"],
  ["AUTO_DISABLE_AFTER", "never"],
  ["FAILING_NOTICE_AFTER", "soon"],
  ["KEY_ROTATION_GRACE", "a fortnight"],
  ["RETENTION", "500ms"],
  ["MAX_SUBSCRIPTIONS_PER_CLIENT", "0"],
  ["ALLOW_PRIVATE_TARGETS", "maybe"],
  ["ALLOW_HTTP_TARGETS", "perhaps"],
  ["SIGNING_KEY_BITS", "1024"],
  ["SCHEDULER_POLL_MS", "0"],
  ["DELIVERY_CONCURRENCY", "many"],
  ["DELIVERY_ENDPOINT_CONCURRENCY", "0"],
  ["DELIVERY_CLIENT_CONCURRENCY", "4"],
  ["DATABASE_POOL_SIZE", "0"],
  ["SHUTDOWN_GRACE_MS", "soon"],
  ["WATCHER_BUFFER_SIZE", "0"],
  ["RELAY_LEASE", "500ms"],
  ["LOG_LEVEL", "verbose"],
  ["METRICS_ENABLED", "sometimes"],
  ["METRICS_TOKEN", "short"],
  ["OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"],
  ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://collector/v1/traces"],
  ["PROPAGATE_TRACE_CONTEXT", "maybe"],
];

for (const [name, value] of BAD) {
  test(`${name}=${value}: exit 2 with one line naming ${name}`, async (t) => {
    const { code, stderr } = await startExpectingExit({ DATA_DIR: join(dir, name), [name]: value });
    t.is(code, 2, stderr);
    t.regex(stderr, /^[^\n]+\n$/, "one line");
    t.true(stderr.includes(name), stderr);
  });
}

test("POSTGRES_URL without DATABASE_URL: exit 2 with one line saying to set DATABASE_URL", async (t) => {
  const { code, stderr } = await startExpectingExit({
    DATA_DIR: join(dir, "postgres-url"),
    POSTGRES_URL: "postgres://postgres@127.0.0.1:5432/app",
  });
  t.is(code, 2, stderr);
  t.regex(stderr, /^[^\n]+\n$/, "one line");
  t.regex(stderr, /set DATABASE_URL=.*POSTGRES_URL is read only by the tests/);
});

(existsSync("/proc/self") ? test : test.skip)(
  "DATA_DIR=/proc/x, where mkdir -p never ends: exit 2 at once with one line naming DATA_DIR",
  async (t) => {
    const { code, stderr } = await startExpectingExit({ DATA_DIR: "/proc/x" });
    t.is(code, 2, stderr);
    t.regex(stderr, /^DATA_DIR \/proc\/x cannot be used: [^\n]+\n$/);
  },
);

test("the README's configuration table has no variable this test leaves out", async (t) => {
  const readme = await readFile("README.md", "utf8");
  const table = readme.slice(readme.indexOf("## Configuration"), readme.indexOf("## Security"));
  const documented = [...table.matchAll(/^\| `([A-Z_]+)`(?: \/ `([A-Z_]+)`)?/gm)].flatMap((row) => row.slice(1).filter(Boolean));
  t.deepEqual(
    documented.filter((name) => !BAD.some(([bad]) => bad === name)),
    [],
  );
});
