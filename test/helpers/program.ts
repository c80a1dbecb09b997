import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

let newestSource: number | undefined;

/** The latest change to any file under src/, once per test process. */
function newestSourceMs(): number {
  if (newestSource !== undefined) return newestSource;
  let newest = 0;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  walk("src");
  newestSource = newest;
  return newest;
}

/**
 * The node arguments that run one of our programs (`main`: the service,
 * `cli/main`: the CLI) as its own process: its build in dist/, as
 * `npm start` and `bin/webhooks.js` run it, when that build is newer than
 * every source file (`npm test` builds first); its sources through tsx
 * otherwise, so a test run straight after an edit tests the edit.
 */
export function programArgs(program: "main" | "cli/main"): string[] {
  const built = join("dist", `${program}.js`);
  const builtMs = statSync(built, { throwIfNoEntry: false })?.mtimeMs;
  if (builtMs !== undefined && builtMs >= newestSourceMs()) return [built];
  return ["--import", "tsx", join("src", `${program}.ts`)];
}
