// Restores package-lock.json entries for other platforms' optional binaries
// (`node --import tsx tools/complete-lock-file.ts`).
//
// npm records every optional platform package of a dependency (biome's and
// buf's darwin, win32, musl… builds) in the lock file, and `npm ci` from npm
// 11 on refuses a lock file without them. The registry our machines reach does
// not serve those packages, so a lock file written here lacks them; this adds
// each one back with the version its parent pins and the platform it is for,
// which is all `npm ci` needs to skip it on Linux. (Without an integrity hash:
// npm on such a platform fetches it unverified.) npm keeps the entries on
// later installs; only a lock file written from scratch loses them again.
import { readFileSync, writeFileSync } from "node:fs";

type Entry = { version: string; dev?: boolean; optional?: boolean; optionalDependencies?: Record<string, string> };

/** The platform a package name ends with, as npm's os/cpu/libc fields say it. */
const PLATFORMS: Array<[suffix: string, platform: { os: string[]; cpu: string[]; libc?: string[] }]> = [
  ["-linux-arm64-musl", { os: ["linux"], cpu: ["arm64"], libc: ["musl"] }],
  ["-linux-x64-musl", { os: ["linux"], cpu: ["x64"], libc: ["musl"] }],
  ["-linux-armv7", { os: ["linux"], cpu: ["arm"] }],
  ["-android-arm64", { os: ["android"], cpu: ["arm64"] }],
  ["-android-x64", { os: ["android"], cpu: ["x64"] }],
  ["-darwin-arm64", { os: ["darwin"], cpu: ["arm64"] }],
  ["-darwin-x64", { os: ["darwin"], cpu: ["x64"] }],
  ["-win32-arm64", { os: ["win32"], cpu: ["arm64"] }],
  ["-win32-x64", { os: ["win32"], cpu: ["x64"] }],
];

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8")) as { packages: Record<string, Entry> };
const added: string[] = [];
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    // Hoisted next to its parent, or at the top.
    const parentDir = path.slice(0, path.lastIndexOf("node_modules/"));
    if (
      lock.packages[`${path}/node_modules/${name}`] ||
      lock.packages[`${parentDir}node_modules/${name}`] ||
      lock.packages[`node_modules/${name}`]
    )
      continue;
    const platform = PLATFORMS.find(([suffix]) => name.endsWith(suffix))?.[1];
    if (!platform) throw new Error(`${name} (optional dependency of ${path}) is missing and names no platform this script knows`);
    lock.packages[`node_modules/${name}`] = { version, ...(entry.dev ? { dev: true } : {}), optional: true, ...platform };
    added.push(`${name}@${version}`);
  }
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(
  added.length === 0 ? "package-lock.json is complete" : `added ${added.join(", ")}; now run npm install, which puts them in npm's order`,
);
