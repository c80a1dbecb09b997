import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { EMBEDDED_SHARED_BUFFERS, openEmbeddedDatabase } from "../../src/store/postgres/embedded-database.js";

async function dataDir(t: import("ava").ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wh-embedded-db-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

// The embedded tests take turns: each PGlite instance is a few hundred MB and seconds of CPU.
test.serial("a new embedded database is made whole, keeps what is written, and runs with its settings", async (t) => {
  const dir = await dataDir(t);
  const directory = join(dir, "pglite");
  const first = await openEmbeddedDatabase(directory);
  try {
    await first.exec("CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)");
    t.is((await first.query<{ shared_buffers: string }>("SHOW shared_buffers")).rows[0]?.shared_buffers, EMBEDDED_SHARED_BUFFERS);
    // A new WAL segment is not written full of zeros first.
    t.is((await first.query<{ wal_init_zero: string }>("SHOW wal_init_zero")).rows[0]?.wal_init_zero, "off");
  } finally {
    await first.close();
  }
  t.deepEqual(await readdir(dir), ["pglite"], "nothing half-made is left beside it");
  const again = await openEmbeddedDatabase(directory);
  try {
    t.deepEqual((await again.query<{ n: number }>("SELECT n FROM kept")).rows, [{ n: 42 }]);
  } finally {
    await again.close();
  }
});

test.serial("an empty directory where the database goes gives way to a new one; an interrupted creation's leftovers go", async (t) => {
  const dir = await dataDir(t);
  await mkdir(join(dir, "pglite"));
  await mkdir(join(dir, "pglite.new-12345"));
  await writeFile(join(dir, "pglite.new-12345", "PG_VERSION"), "17");
  const db = await openEmbeddedDatabase(join(dir, "pglite"));
  try {
    t.deepEqual((await db.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
  } finally {
    await db.close();
  }
  t.deepEqual(await readdir(dir), ["pglite"]);
});

test.serial("a directory holding files but no database is refused with what to do, and left as it was", async (t) => {
  const dir = await dataDir(t);
  await mkdir(join(dir, "pglite"));
  await writeFile(join(dir, "pglite", "notes.txt"), "mine");
  await t.throwsAsync(() => openEmbeddedDatabase(join(dir, "pglite")), { message: /holds files but no database.*move it away/ });
  t.deepEqual(await readdir(join(dir, "pglite")), ["notes.txt"]);
  t.deepEqual(await readdir(dir), ["pglite"]);
});
