// CongoDB, the MongoDB wire-protocol server in @push.rocks/smartmongo (MIT),
// as a stand-in for mongod where none can be installed: installed on first use
// into node_modules/.cache/mongo-emulator, patched, and started on a free port.
//
// The package is fetched with `npm pack` at a pinned version and checked
// against its pinned integrity; its own dependencies are not installed (one of
// them is unpublished, another downloads mongod), only CongoDB's runtime ones,
// from this folder's package.json and lock file. congodb.patch closes the gaps
// that kept our adapter from running (see the patch for each): it is applied
// with `git apply`, which refuses, and this with it, if the text it patches
// changed.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { copyFile, mkdir, rename, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const HERE = dirname(fileURLToPath(import.meta.url));
const CACHE = join(HERE, "..", "..", "node_modules", ".cache", "mongo-emulator");

const PACKAGE = "@push.rocks/smartmongo@2.2.0";
const INTEGRITY = "sha512-ovVCNoJ3D0aBuKtoKaQWWQKvBngaGJq9fAPQigzji1EHsS1XyGpXWCpe5nq/ptGvBROOcpqZcOFEGAcrnb+OjA==";
const FILES = ["package.json", "package-lock.json", "congodb.patch"];
/** The TypeScript sources are what the patch changes; tsx (which runs our tests) runs them. */
const ENTRY = join("node_modules", "@push.rocks", "smartmongo", "ts", "congodb", "index.ts");

export interface Emulator {
  /** mongodb://127.0.0.1:PORT */
  url: string;
  /** Stops serving: its connections are cut, its data is kept (in memory). */
  stop(): Promise<void>;
  /** Serves again after `stop`, on the same port, with the data it had, as a restarted mongod. */
  start(): Promise<void>;
}

interface CongoServer {
  readonly port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Installs the patched emulator unless this exact one is installed already; answers its entry file. */
export async function installEmulator(log: (line: string) => void = () => {}): Promise<string> {
  const hash = createHash("sha256").update(PACKAGE).update(INTEGRITY);
  for (const file of FILES) hash.update(readFileSync(join(HERE, file)));
  const dir = join(CACHE, hash.digest("hex").slice(0, 16));
  if (existsSync(join(dir, ENTRY))) return join(dir, ENTRY);

  log(`installing ${PACKAGE} (CongoDB) into ${dir}`);
  // Made under a name of this process's own, then moved into place whole.
  const own = `${dir}.${process.pid}`;
  await rm(own, { recursive: true, force: true });
  await mkdir(own, { recursive: true });
  try {
    for (const file of FILES) await copyFile(join(HERE, file), join(own, file));
    await run("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: own });
    const { stdout } = await run("npm", ["pack", PACKAGE, "--json", "--pack-destination", own], { cwd: own });
    const [packed] = JSON.parse(stdout) as Array<{ filename: string; integrity: string }>;
    if (packed?.integrity !== INTEGRITY) throw new Error(`${PACKAGE} has integrity ${packed?.integrity}, expected ${INTEGRITY}`);
    const target = join(own, "node_modules", "@push.rocks", "smartmongo");
    await mkdir(target, { recursive: true });
    await run("tar", ["-xzf", join(own, packed.filename), "-C", target, "--strip-components=1"]);
    await applyPatch(target, join(own, "congodb.patch"));
    await rename(own, dir);
  } catch (error) {
    await rm(own, { recursive: true, force: true });
    // Another process may have installed the same one meanwhile.
    if (!existsSync(join(dir, ENTRY))) throw error;
  }
  return join(dir, ENTRY);
}

async function applyPatch(target: string, patch: string): Promise<void> {
  // Outside any repository (this folder may be inside ours), so paths are the package's own.
  const env = { ...process.env, GIT_CEILING_DIRECTORIES: dirname(target) };
  try {
    await run("git", ["apply", "--check", patch], { cwd: target, env });
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr ?? String(error);
    throw new Error(`congodb.patch does not apply to ${PACKAGE}: the text it patches changed\n${detail}`);
  }
  await run("git", ["apply", patch], { cwd: target, env });
}

/** Starts the emulator on a free port of 127.0.0.1, keeping its data in memory. */
export async function startEmulator(log?: (line: string) => void): Promise<Emulator> {
  const entry = await installEmulator(log);
  const { CongoServer } = (await import(pathToFileURL(entry).href)) as {
    CongoServer: new (options: { port: number; host: string }) => CongoServer;
  };
  const server = new CongoServer({ port: 0, host: "127.0.0.1" });
  await server.start();
  return { url: `mongodb://127.0.0.1:${server.port}`, stop: () => server.stop(), start: () => server.start() };
}
