import { rm } from "node:fs/promises";
import test from "ava";
import pg from "pg";
import { arrayLiteral } from "../../src/store/postgres/array-literal.js";
import { EmbeddedPool } from "../../src/store/postgres/embedded-pool.js";
import { isDataError } from "../../src/store/postgres/rows.js";
import type { SqlPool } from "../../src/store/postgres/sql-pool.js";
import { embeddedDataDir } from "../helpers/stores.js";

test("literals are written as PostgreSQL reads them", (t) => {
  t.is(arrayLiteral([]), "{}");
  t.is(arrayLiteral(["a", null, undefined, "NULL", ""]), '{"a",NULL,NULL,"NULL",""}');
  t.is(arrayLiteral(['say "hi"', "back\\slash", "{,}"]), '{"say \\"hi\\"","back\\\\slash","{,}"}');
  t.is(arrayLiteral([1, -2.5, true, false]), "{1,-2.5,t,f}");
  t.is(arrayLiteral([new Date(Date.UTC(2026, 10, 28, 6, 52, 0, 123))]), '{"2026-11-28T06:52:00.123Z"}');
});

/** What the database reads each literal as, through `pool`, next to what `pg` reads the same array as. */
async function roundTrips(t: import("ava").ExecutionContext, pool: SqlPool): Promise<void> {
  const texts = ["plain", 'a "quoted" word', "back\\slash\\", "comma, {braces}", "NULL", "", "ünïcødé ✓", null, "   spaced  "];
  const numbers = [0, 1, -7, 2147483647, null];
  const flags = [true, false, null];
  const times = [new Date(Date.UTC(2026, 10, 28, 6, 52, 0, 123)), new Date(Date.UTC(1999, 0, 1)), null];
  const query = "SELECT $1::text[] AS texts, $2::int[] AS numbers, $3::bool[] AS flags, $4::timestamptz[] AS times";
  const literal = await pool.query(query, [arrayLiteral(texts), arrayLiteral(numbers), arrayLiteral(flags), arrayLiteral(times)]);
  const asPg = await pool.query(query, [texts, numbers, flags, times]);
  t.deepEqual(literal.rows[0], { texts, numbers, flags, times });
  t.deepEqual(literal.rows[0], asPg.rows[0]);
  const invalid = await pool.query("SELECT $1::timestamptz[]", [arrayLiteral([new Date(Number.NaN)])]).catch((error: unknown) => error);
  t.true(isDataError(invalid), "an invalid date is refused as bad data");
}

test("the embedded database reads each literal as pg's own array", async (t) => {
  const dir = await embeddedDataDir("wh-array-literal-");
  const pool = await EmbeddedPool.open(dir, [], (error) => t.fail(`embedded database failed: ${error.message}`));
  t.teardown(async () => {
    await pool.end();
    await rm(dir, { recursive: true, force: true });
  });
  await roundTrips(t, pool);
});

const postgresUrl = process.env.POSTGRES_URL;
if (postgresUrl) {
  test("PostgreSQL reads each literal as pg's own array", async (t) => {
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 1 });
    t.teardown(() => pool.end());
    await roundTrips(t, pool);
  });
} else test.skip("PostgreSQL reads each literal as pg's own array: needs PostgreSQL (set POSTGRES_URL)", () => {});
