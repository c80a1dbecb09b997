import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import test from "ava";
import Fastify from "fastify";
import semver from "semver";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PYTHON = "/usr/bin/python3";
const PYTHON_PACKAGE = join(ROOT, "packages/receiver-python");
/** No __pycache__ left in the work tree. */
const pythonEnv = { ...process.env, PYTHONDONTWRITEBYTECODE: "1" };

// Checked before any test is declared (ava wants them declared synchronously).
const pip =
  existsSync(PYTHON) &&
  (await run(PYTHON, ["-c", "import setuptools, pip, ensurepip, cryptography"], { env: pythonEnv }).then(
    () => true,
    () => false,
  ));
if (!pip)
  console.warn(
    "!!! the pip install tests are SKIPPED: they need Debian's python3-pip, python3-setuptools, python3-venv, python3-cryptography",
  );
const pipTest = pip ? test : test.skip;

async function temporaryDirectory(t: { teardown: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wh-install-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The paths (relative to the repository) that .gitignore does not cover. */
async function notIgnored(paths: string[]): Promise<string[]> {
  const ignored: string[] = await run("git", ["check-ignore", "--no-index", ...paths], { cwd: ROOT }).then(
    ({ stdout }) => stdout.split("\n").filter(Boolean),
    // Exit 1: none of them is ignored.
    (error: { code?: number }) => (error.code === 1 ? [] : Promise.reject(error)),
  );
  return paths.filter((path) => !ignored.includes(path));
}

test("every locked package supports the oldest Node that package.json allows, so npm install warns of no engine", async (t) => {
  const manifest = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { engines: { node: string } };
  const oldest = semver.minVersion(manifest.engines.node)?.version ?? "";
  t.truthy(oldest);
  const lock = JSON.parse(await readFile(join(ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, { engines?: { node?: string } | string[] }>;
  };
  const tooNew = Object.entries(lock.packages)
    .map(([path, entry]) => [path, Array.isArray(entry.engines) ? undefined : entry.engines?.node] as const)
    .filter(([, range]) => range !== undefined && !semver.satisfies(oldest, range))
    .map(([path, range]) => `${path} needs Node ${range}`);
  t.deepEqual(tooNew, [], `Node ${oldest} is supported (package.json's engines): pin an older version in "overrides"`);
});

// light-my-request (Fastify's inject) gets a cookie version that runs on Node 20: it must still write cookies.
test("Fastify's inject still sends and reads cookies with the cookie version pinned for Node 20", async (t) => {
  const app = Fastify();
  t.teardown(() => app.close());
  app.get("/echo", async (request, reply) => reply.header("set-cookie", "seen=yes; Path=/").send(request.headers.cookie ?? ""));
  const response = await app.inject({ method: "GET", url: "/echo", cookies: { session: "a b", theme: "dark" } });
  t.is(response.body, "session=a%20b; theme=dark");
  t.deepEqual(
    response.cookies.map(({ name, value }) => [name, value]),
    [["seen", "yes"]],
  );
});

test("npm pack's tarball, in the root or the package's folder, is ignored by git", async (t) => {
  const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts", "--workspace", "@webhooks/receiver"], {
    cwd: ROOT,
  });
  const filename = (JSON.parse(stdout) as Array<{ filename: string }>)[0]?.filename ?? "";
  t.regex(filename, /\.tgz$/);
  t.deepEqual(await notIgnored([filename, `packages/receiver/${filename}`]), []);
});

/** A copy of the Python package, so that pip's build leaves nothing in this checkout. */
async function pythonPackageCopy(dir: string): Promise<string> {
  const copy = join(dir, "receiver-python");
  await cp(PYTHON_PACKAGE, copy, { recursive: true });
  return copy;
}

// Offline (no index): setuptools and cryptography come from the system.
const OFFLINE = ["--no-build-isolation", "--no-index", "--no-deps", "--quiet"];

pipTest("what pip install leaves in the Python package's folder is ignored by git", async (t) => {
  const dir = await temporaryDirectory(t);
  const copy = await pythonPackageCopy(dir);
  const before = new Set(await readdir(copy));
  await run(PYTHON, ["-m", "pip", "install", ...OFFLINE, "--target", join(dir, "target"), "."], { cwd: copy, env: pythonEnv });
  // A folder as git's patterns name one: with its slash.
  const left = (await readdir(copy, { withFileTypes: true }))
    .filter((entry) => !before.has(entry.name))
    .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name));
  t.true(left.length > 0, "pip's build leaves its folders next to the source");
  t.deepEqual(await notIgnored(left.map((name) => `packages/receiver-python/${name}`)), []);
});

pipTest("the Python package installs into a virtual environment, as its README says for a PEP 668 system", async (t) => {
  const readme = await readFile(join(PYTHON_PACKAGE, "README.md"), "utf8");
  t.regex(readme, /python3 -m venv \.venv/);
  t.regex(readme, /PEP 668/);
  const dir = await temporaryDirectory(t);
  const copy = await pythonPackageCopy(dir);
  const venv = join(dir, ".venv");
  // The system's packages are visible so that the install needs no index.
  await run(PYTHON, ["-m", "venv", "--system-site-packages", venv], { env: pythonEnv });
  await run(join(venv, "bin/pip"), ["install", ...OFFLINE, copy], { env: pythonEnv });
  const { stdout } = await run(join(venv, "bin/python"), ["-c", "import webhook_receiver; print(webhook_receiver.__file__)"], {
    cwd: dir,
    env: pythonEnv,
  });
  t.true(stdout.trim().startsWith(venv), stdout);
});
