import { execFile } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import test from "ava";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

test("npm ci accepts package-lock.json, as .ci/run and the Dockerfile run it", async (t) => {
  // A copy, so that nothing touches this checkout's node_modules.
  const dir = await mkdtemp(join(tmpdir(), "wh-lock-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const file of ["package.json", "package-lock.json"]) await copyFile(join(ROOT, file), join(dir, file));
  const result = await promisify(execFile)("npm", ["ci", "--dry-run", "--ignore-scripts", "--offline", "--no-audit", "--no-fund"], {
    cwd: dir,
  }).then(
    () => "",
    (error: Error & { stderr?: string }) => error.stderr ?? error.message,
  );
  t.is(
    result
      .split("\n")
      .filter((line) => line.startsWith("npm error"))
      .join("\n"),
    "",
    "entries missing from the lock file? `node --import tsx tools/complete-lock-file.ts && npm install` restores other platforms' binaries",
  );
});
