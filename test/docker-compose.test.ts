import { execFile, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import test from "ava";
import { parse } from "yaml";
import { loadConfig } from "../src/config.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** What a command answers; a non-zero exit is an answer too. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const succeeds = (command: string, args: string[]) => spawnSync(command, args, { stdio: "ignore" }).status === 0;

// Debian's docker-compose (v1.29), which .ci/run installs: the oldest reader the file must satisfy.
const hasCompose = succeeds("docker-compose", ["version"]);
if (!hasCompose)
  console.warn("!!! docker-compose is not installed: the docker-compose.yml checks are SKIPPED (apt-get install docker-compose)");
const withCompose = hasCompose ? test : test.skip;

const SECRETS = { SIGNING_MASTER_KEY: "ab".repeat(32), ADMIN_TOKEN: "compose-test-admin-token" };

/**
 * `docker-compose …` on this checkout's file, reading .env.example rather
 * than a developer's .env, with only PATH and `env` from outside.
 */
function compose(args: string[], env: Record<string, string>) {
  return run("docker-compose", ["--env-file", ".env.example", ...args], { PATH: process.env.PATH, ...env });
}

interface ComposeService {
  image?: string;
  build?: unknown;
  profiles?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: unknown;
  ports?: string[];
  stop_grace_period?: string;
}

const EXACT_TAG = /:\d+\.\d+(\.\d+)?(-[a-z0-9.]+)?$/;

function seconds(duration: string | undefined): number {
  const match = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(duration ?? "");
  if (!duration || !match) throw new Error(`unreadable duration ${JSON.stringify(duration)}`);
  return Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0);
}

for (const profile of ["default", "postgres"]) {
  withCompose(
    `docker-compose config (profile ${profile}): each service built here gets a configuration src/config.ts accepts`,
    async (t) => {
      const resolved = await compose([...(profile === "default" ? [] : ["--profile", profile]), "config"], SECRETS);
      t.is(resolved.code, 0, resolved.stderr);
      const services = (parse(resolved.stdout) as { services: Record<string, ComposeService> }).services;
      const active = Object.entries(services).filter(([, service]) => !service.profiles || service.profiles.includes(profile));
      const ours = active.filter(([, service]) => service.build);
      t.true(ours.length > 0, "a service built from this checkout");
      for (const [name, service] of ours) {
        const config = loadConfig(service.environment ?? {});
        t.not(config.store.kind, "embedded", `${name} uses its database server`);
        t.is(config.signingMasterKey?.length, 32, name);
        t.truthy(config.adminToken, name);
        for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
          t.is(condition, "service_healthy", `${name} waits for ${dependency} to be healthy`);
          t.truthy(services[dependency]?.healthcheck, `${dependency} has a health check`);
          t.true(
            active.some(([each]) => each === dependency),
            `${dependency} runs in profile ${profile}`,
          );
        }
        t.true((service.ports ?? []).length > 0, name);
        for (const port of service.ports ?? []) t.regex(port, /^127\.0\.0\.1:/, `${name} publishes on loopback only`);
        // The service's worst-case stop: the grace for requests, again for deliveries, 5 s to save.
        const stopSeconds = (2 * config.shutdownGraceMs + 5_000) / 1000;
        t.true(seconds(service.stop_grace_period) > stopSeconds, `${name}: stop_grace_period > ${stopSeconds} s`);
      }
      for (const [name, service] of active) if (service.image) t.regex(service.image, EXACT_TAG, `${name}: an exact image version`);
    },
  );
}

withCompose("docker-compose refuses to start without each required secret, and names it; .env.example lists them", async (t) => {
  const file = await readFile(join(ROOT, "docker-compose.yml"), "utf8");
  const required = [...new Set([...file.matchAll(/\$\{(\w+):\?/g)].map((match) => match[1] as string))];
  t.deepEqual(required.sort(), Object.keys(SECRETS).sort());
  const example = await readFile(join(ROOT, ".env.example"), "utf8");
  for (const name of required) {
    t.regex(example, new RegExp(`^${name}=$`, "m"), `.env.example lists ${name}, empty`);
    const { [name as keyof typeof SECRETS]: _left, ...others } = SECRETS;
    const refused = await compose(["config"], others);
    t.not(refused.code, 0, `config without ${name}`);
    t.regex(refused.stderr, new RegExp(`${name} must be set`));
  }
});

test("the Dockerfile builds on an exact Node image", async (t) => {
  const dockerfile = await readFile(join(ROOT, "Dockerfile"), "utf8");
  const images = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((match) => match[1] as string);
  t.true(images.length > 0);
  for (const image of images) t.regex(image, /^node:\d+\.\d+\.\d+-[a-z]+-slim$/);
  t.regex(dockerfile, /^RUN npm ci /m);
});

test("the Dockerfile runs the service as npm start does: plain node dist/main.js", async (t) => {
  const dockerfile = await readFile(join(ROOT, "Dockerfile"), "utf8");
  const { start } = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")).scripts;
  t.is(start, "node dist/main.js");
  t.is(JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)?.[1] ?? "[]").join(" "), start);
});

// Brings the stack up for real: only where a Docker daemon answers.
const compose2 = succeeds("docker", ["compose", "version"]);
const hasDaemon = (compose2 || hasCompose) && succeeds("docker", ["info"]);
if (!hasDaemon) console.warn("!!! no Docker daemon (docker info failed) or no compose: the docker compose smoke test is SKIPPED");

(hasDaemon ? test : test.skip)("smoke: docker compose up builds the image and starts the MongoDB stack, which serves", async (t) => {
  t.timeout(20 * 60_000);
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port: free } = probe.address() as { port: number };
      probe.close(() => resolve(free));
    });
  });
  const project = `wh-smoke-${randomBytes(4).toString("hex")}`;
  const env = { ...process.env, ...SECRETS, SERVICE_PORT: String(port) };
  const stack = (args: string[]) =>
    compose2
      ? run("docker", ["compose", "--env-file", ".env.example", "-p", project, ...args], env)
      : run("docker-compose", ["--env-file", ".env.example", "-p", project, ...args], env);
  t.teardown(async () => {
    await stack(["down", "--volumes", "--remove-orphans"]);
  });
  const up = await stack(["up", "--detach", "--build"]);
  t.is(up.code, 0, up.stderr);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 5 * 60_000;
  let healthy = false;
  while (!healthy && Date.now() < deadline) {
    healthy = await fetch(`${base}/healthz`).then(
      (response) => response.ok,
      () => false,
    );
    if (!healthy) await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  t.true(healthy, `GET /healthz answered 200 within 5 minutes\n${(await stack(["logs", "--no-color", "service"])).stdout}`);
  t.is((await fetch(`${base}/openapi.json`)).status, 200);
  const client = await fetch(`${base}/api/internal/clients`, {
    method: "POST",
    headers: { authorization: `Bearer ${SECRETS.ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "smoke" }),
  });
  t.is(client.status, 200, await client.text());
});
