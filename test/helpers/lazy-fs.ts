import { type ChildProcess, execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { promisify } from "node:util";
import { spawnOwned } from "./children.js";

const PYTHON = "/usr/bin/python3";
const LAZY_FS = new URL("../../tools/lazy-fs/lazyfs.py", import.meta.url).pathname;

/** Why a power cut cannot be simulated here (tools/lazy-fs needs FUSE and root), or undefined if it can. */
export function lazyFsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "mounting FUSE needs root";
  if (!existsSync("/dev/fuse")) return "no /dev/fuse";
  try {
    execFileSync(PYTHON, ["-c", "import fusepy"], { stdio: "ignore" });
    execFileSync("fusermount", ["-V"], { stdio: "ignore" });
  } catch {
    return "tools/lazy-fs needs Debian's python3-fusepy (and its fusermount)";
  }
  return undefined;
}

/**
 * A mount of tools/lazy-fs: a file system that keeps only what was synced
 * when `loseUnsynced()` cuts the power.
 */
export class LazyFs {
  private constructor(
    readonly path: string,
    private readonly child: ChildProcess,
    private readonly lines: Interface,
  ) {}

  /** Mounts a new one holding a durable copy of `seed`. */
  static async mount(seed: string): Promise<LazyFs> {
    const path = await mkdtemp(join(tmpdir(), "wh-lazy-fs-"));
    const child = spawnOwned(PYTHON, ["-W", "ignore", LAZY_FS, path, "--seed", seed], { stdio: ["pipe", "pipe", "inherit"] });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const mounted = new LazyFs(path, child, lines);
    await mounted.#answer("mounted");
    return mounted;
  }

  /** The power cut: everything not synced is gone once this resolves. */
  async loseUnsynced(): Promise<void> {
    const lost = this.#answer("lost");
    this.child.stdin?.write("lose\n");
    await lost;
  }

  async unmount(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.stdin?.end();
      await exited;
    }
    await promisify(execFile)("fusermount", ["-u", "-z", this.path]).catch(() => {});
    await rm(this.path, { recursive: true, force: true });
  }

  #answer(expected: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`tools/lazy-fs did not answer "${expected}" within 60 s`)), 60_000);
      const onExit = (code: number | null) => reject(new Error(`tools/lazy-fs exited (${code}) before answering "${expected}"`));
      const onLine = (line: string) => {
        if (line.trim() !== expected) return;
        clearTimeout(timer);
        this.lines.off("line", onLine);
        this.child.off("exit", onExit);
        resolve();
      };
      this.lines.on("line", onLine);
      this.child.once("exit", onExit);
    });
  }
}
