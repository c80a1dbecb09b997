import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, openSync, writeSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import test, { type ExecutionContext } from "ava";
import { MongoClient } from "mongodb";
import pg from "pg";
import { startEmulator } from "../../tools/mongo-emulator/emulator.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { eventually } from "../helpers/eventually.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, startTestService } from "../helpers/service.js";
import { embeddedDataDir } from "../helpers/stores.js";

const run = promisify(execFile);
/** mongod's OutOfDiskSpace error code. */
const OUT_OF_DISK_SPACE = 14031;
const postgresUrl = process.env.POSTGRES_URL;

/** A tmpfs of `megabytes` mounted on a new directory; `unmount` removes it. */
async function smallDisk(megabytes: number): Promise<{ dir: string; unmount(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "wh-full-disk-"));
  await run("mount", ["-t", "tmpfs", "-o", `size=${megabytes}m`, "tmpfs", dir]);
  return {
    dir,
    async unmount() {
      await run("umount", [dir]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Why no tmpfs can be mounted here, or undefined if one can (root, allowed to mount). */
async function cannotMount(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return "needs root to mount a small tmpfs (run the tests as root)";
  try {
    await (await smallDisk(1)).unmount();
    return undefined;
  } catch (error) {
    return `cannot mount a tmpfs here: ${(error as Error).message.trim()}`;
  }
}

/** Fills the disk `dir` is on with one file, to the last block it will take; returns the file. */
function fill(dir: string): string {
  const filler = join(dir, "filler");
  const fd = openSync(filler, "w");
  try {
    for (const size of [1 << 20, 4096, 1]) {
      const chunk = Buffer.alloc(size, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
  return filler;
}

/** Fills the store's disk up; `free` gives the room back. */
interface Filling {
  fill(): Promise<void>;
  free(): Promise<void>;
}

/** Filling the disk `dir` is on with a file, freed by deleting it. */
function fillingDisk(dir: string): Filling {
  let filler = "";
  return {
    fill: async () => {
      filler = fill(dir);
    },
    free: () => rm(filler),
  };
}

/**
 * The disk under the store fills up while the service runs: publishes answer
 * 503 `unavailable` saying the store is full, /readyz says so; once the
 * filler is deleted the service is ready again by itself, and every
 * notification accepted before (and after) is delivered.
 */
async function fullDisk(t: ExecutionContext, env: Record<string, string>, disk: Filling): Promise<void> {
  const receiver = await Receiver.start();
  const { service, baseUrl } = await startTestService(env);
  t.teardown(async () => {
    await service.stop();
    await receiver.close();
  });
  const owner = await createClient(baseUrl, "Full disk");
  const created = await rest(baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Shipped", url: receiver.url }, owner.auth);
  t.is(created.status, 200, created.text);
  // Payloads that do not compress, so that each publish takes room of its own.
  const publish = () =>
    rest(
      baseUrl,
      "POST",
      "/api/internal/events/publish",
      {
        clientId: owner.id,
        event: "Order.Shipped",
        payload: { OrderId: randomBytes(8).toString("hex"), note: randomBytes(1500).toString("base64") },
      },
      adminAuth,
    );
  const accepted = new Set<string>();
  const accept = (answer: Awaited<ReturnType<typeof publish>>) => {
    for (const id of answer.json.jobIds as string[]) accepted.add(id);
  };
  for (let n = 0; n < 10; n++) accept(await publish());

  await disk.fill();
  let refused: Awaited<ReturnType<typeof publish>> | undefined;
  for (let n = 0; n < 5000 && !refused; n++) {
    const answer = await publish();
    if (answer.status === 200) accept(answer);
    else refused = answer;
  }
  if (!refused) return t.fail("every publish was accepted on a full disk");
  t.is(refused.status, 503, refused.text);
  t.is(refused.json.code, "unavailable");
  t.regex(String(refused.json.message), /the store is full .*: nothing was written; free space on the database's disk, then retry/);
  const ready = await rest(baseUrl, "GET", "/readyz");
  t.is(ready.status, 503, ready.text);
  t.regex(String(ready.json.reason), /^the store is full \(since .*\): .*; free space on its disk$/);
  t.is((await rest(baseUrl, "GET", "/livez")).status, 200, "alive all the same");
  // While full, a write may still fit in a page the database holds: some publishes are accepted (and
  // must be delivered like any), the rest refused alike.
  const later = [];
  for (let n = 0; n < 20; n++) later.push(await publish());
  for (const answer of later) if (answer.status === 200) accept(answer);
  t.true(
    later.every((answer) => answer.status === 200 || answer.json.code === "unavailable"),
    later.map((answer) => answer.text).join("\n"),
  );
  t.true(
    later.some((answer) => answer.status === 503),
    "still full: still refused",
  );
  t.is((await rest(baseUrl, "GET", "/readyz")).status, 503, "still full: still not ready");

  await disk.free();
  await eventually("/readyz to recover", async () => (await rest(baseUrl, "GET", "/readyz")).status === 200, { timeoutMs: 20_000 });
  const after = await publish();
  t.is(after.status, 200, after.text);
  accept(after);
  const delivered = () => new Set(receiver.requests.filter((r) => r.status === 200).map((r) => r.headers["x-jobid"] as string));
  await eventually("every accepted notification to be delivered", () => [...accepted].every((id) => delivered().has(id)), {
    timeoutMs: 60_000,
  });
  t.true(accepted.size >= 11, "the ten before, and the one after");
}

const unmountable = await cannotMount();
if (unmountable) {
  test.skip(`full disk: ${unmountable}`, () => {});
} else {
  test.serial(
    "pglite: a full disk under DATA_DIR: publishes answer 503 store full, /readyz says so; freed, it recovers and loses nothing",
    async (t) => {
      t.timeout(180_000);
      // The new database takes ~40 MB: room for it and a few MB more, which the filler then takes.
      const disk = await smallDisk(64);
      t.teardown(() => disk.unmount());
      const made = await embeddedDataDir();
      await run("cp", ["-R", join(made, "pglite"), join(disk.dir, "pglite")]);
      await rm(made, { recursive: true, force: true });
      await fullDisk(t, { DATA_DIR: disk.dir }, fillingDisk(disk.dir));
    },
  );

  if (postgresUrl) {
    test("postgres: a full tablespace under the database: publishes answer 503 store full, /readyz says so; freed, it recovers and loses nothing", async (t) => {
      t.timeout(180_000);
      const disk = await smallDisk(24);
      t.teardown(() => disk.unmount());
      // The server's own OS user must own the tablespace's directory.
      await run("chown", ["postgres:postgres", disk.dir]);
      const name = `wh_test_full_${randomBytes(6).toString("hex")}`;
      const admin = new pg.Client({ connectionString: postgresUrl });
      await admin.connect();
      t.teardown(async () => {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.query(`DROP TABLESPACE IF EXISTS ${name}`);
        await admin.end();
      });
      await admin.query(`CREATE TABLESPACE ${name} LOCATION '${disk.dir}'`);
      await admin.query(`CREATE DATABASE ${name} TABLESPACE ${name}`);
      const url = new URL(postgresUrl);
      url.pathname = `/${name}`;
      await fullDisk(t, { DATABASE_URL: url.toString() }, fillingDisk(disk.dir));
    });
  } else {
    test.skip("postgres: a full tablespace: set POSTGRES_URL", () => {});
  }
}

if (process.env.MONGODB_EMULATOR === "congodb") {
  // mongod answers writes with OutOfDiskSpace (14031) here through its failCommand failpoint, as the
  // emulator does too: its own emulator, so that no other test's writes are refused.
  test.serial(
    "mongodb: writes refused for want of disk space (OutOfDiskSpace): publishes answer 503 store full, /readyz says so; room again, it recovers and loses nothing",
    async (t) => {
      t.timeout(180_000);
      const emulator = await startEmulator();
      t.teardown(() => emulator.stop());
      const admin = new MongoClient(emulator.url);
      await admin.connect();
      t.teardown(() => admin.close());
      const refuseWrites = async (mode: "alwaysOn" | "off") => {
        await admin.db("admin").command({
          configureFailPoint: "failCommand",
          mode,
          data: { failCommands: ["insert", "update", "findAndModify", "delete"], errorCode: OUT_OF_DISK_SPACE },
        });
      };
      await fullDisk(
        t,
        { DATABASE_URL: `${emulator.url}/wh_full_disk` },
        { fill: () => refuseWrites("alwaysOn"), free: () => refuseWrites("off") },
      );
    },
  );
} else {
  test.skip("mongodb: writes refused for want of disk space: run under tools/mongo-emulator/run.ts (sets a failpoint on an emulator of its own)", () => {});
}
