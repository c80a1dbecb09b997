import { rm } from "node:fs/promises";
import test from "ava";
import pg from "pg";
import { arrayLiteral } from "../../src/store/postgres/array-literal.js";
import { EmbeddedPool } from "../../src/store/postgres/embedded-pool.js";
import { isDataError } from "../../src/store/postgres/rows.js";
import type { SqlPool } from "../../src/store/postgres/sql-pool.js";
import { embeddedDataDir, postgresOnly } from "../helpers/stores.js";

// pg spells a time in the process's local time: not UTC here (Node reads TZ again when it is set).
process.env.TZ = "America/St_Johns";

test("this process runs off UTC, so that pg's spelling of a time differs from arrayLiteral's", (t) => {
  t.not(new Date(Date.UTC(2026, 0, 1)).getTimezoneOffset(), 0);
});

test("literals are written as PostgreSQL reads them", (t) => {
  t.is(arrayLiteral([]), "{}");
  t.is(arrayLiteral(["a", null, undefined, "NULL", ""]), '{"a",NULL,NULL,"NULL",""}');
  t.is(arrayLiteral(['say "hi"', "back\\slash", "{,}"]), '{"say \\"hi\\"","back\\\\slash","{,}"}');
  t.is(arrayLiteral([1, -2.5, true, false]), "{1,-2.5,t,f}");
  t.is(arrayLiteral([new Date(Date.UTC(2026, 10, 28, 6, 52, 0, 123))]), '{"2026-11-28T06:52:00.123Z"}');
  t.is(arrayLiteral([new Date("+010000-01-01T00:00:00.000Z")]), '{"10000-01-01T00:00:00.000Z"}');
  t.is(arrayLiteral([new Date("0000-06-01T00:00:00.000Z")]), '{"0001-06-01T00:00:00.000Z BC"}');
  t.is(arrayLiteral([new Date(Number.NaN)]), '{"invalid date"}');
});

/**
 * What the database reads each literal as, through `pool`, next to what `pg` reads the same array as.
 * This process is in a time zone off UTC by a fraction of an hour (pg writes times in local time,
 * arrayLiteral in UTC), so that an instant read wrongly would show. The session stays in UTC: pg
 * reads back a time only by hours and minutes of its offset, and local time before 1935 there was
 * off UTC by seconds as well.
 */
async function roundTrips(t: import("ava").ExecutionContext, pool: SqlPool): Promise<void> {
  await pool.query("SET TIME ZONE 'UTC'");
  const texts = ["plain", 'a "quoted" word', "back\\slash\\", "comma, {braces}", "NULL", "", "ünïcødé ✓", null, "   spaced  "];
  const numbers = [0, -0, 1, -7, 2147483647, null];
  const flags = [true, false, null];
  const times = [
    new Date(Date.UTC(2026, 10, 28, 6, 52, 0, 123)),
    new Date(Date.UTC(1999, 0, 1)),
    // Years before 1000, past 9999 and before 1 (1 BC is year 0), which arrayLiteral spells apart.
    new Date("0999-03-04T05:06:07.089Z"),
    new Date("+012345-01-02T03:04:05.678Z"),
    new Date("0000-01-01T00:00:00.000Z"),
    new Date("-000044-03-15T12:00:00.000Z"),
    null,
  ];
  const query = "SELECT $1::text[] AS texts, $2::int[] AS numbers, $3::bool[] AS flags, $4::timestamptz[] AS times";
  const literal = await pool.query(query, [arrayLiteral(texts), arrayLiteral(numbers), arrayLiteral(flags), arrayLiteral(times)]);
  t.deepEqual(literal.rows[0], { texts, numbers: numbers.map((n) => (n === 0 ? 0 : n)), flags, times });
  // pg's own spelling only of the times it writes exactly: it writes a local offset in whole minutes,
  // and local time before 1935 here was off UTC by 52 seconds more (it then reads 52 s early).
  const recent = times.slice(0, 2);
  const asPg = await pool.query(query, [texts, numbers, flags, recent]);
  t.deepEqual({ ...literal.rows[0], times: literal.rows[0]?.times.slice(0, 2) }, asPg.rows[0]);
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

const postgres = postgresOnly(test, "PostgreSQL reads each literal as pg's own array");
if (postgres) {
  test("PostgreSQL reads each literal as pg's own array", async (t) => {
    const store = await postgres.create();
    t.teardown(() => store.cleanup());
    const pool = new pg.Pool({ connectionString: store.env.DATABASE_URL as string, max: 1 });
    t.teardown(() => pool.end());
    await roundTrips(t, pool);
  });
}
