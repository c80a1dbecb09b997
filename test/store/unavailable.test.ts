import test from "ava";
import pg from "pg";
import { StoreUnavailableError } from "../../src/domain/errors.js";
import { reportingUnavailable } from "../../src/store/postgres/unavailable.js";
import { postgresOnly } from "../helpers/stores.js";

const postgres = postgresOnly(test, "a connection lost mid-transaction");

if (postgres) {
  test("a connection lost while held (mid-transaction) fails its statement as unavailable, crashes nothing, and is not reused", async (t) => {
    const store = await postgres.create();
    t.teardown(() => store.cleanup());
    const url = store.env.DATABASE_URL as string;
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on("error", () => {});
    t.teardown(() => pool.end());
    const sql = reportingUnavailable(pool);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    t.teardown(() => admin.end());

    const client = await sql.connect();
    await client.query("BEGIN");
    const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    await admin.query("SELECT pg_terminate_backend($1)", [rows[0]?.pid]);
    // The loss reaches the client as an "error" event (unheard, an uncaught exception that ends the
    // process) and fails the statement, whichever comes first.
    const error = await t.throwsAsync(client.query("SELECT 1"));
    t.true(error instanceof StoreUnavailableError, `${error?.name}: ${error?.message}`);
    client.release();
    t.is(pool.totalCount, 0, "the lost connection left the pool, though its holder did not say it was broken");

    const again = await sql.query<{ one: number }>("SELECT 1 AS one");
    t.is(again.rows[0]?.one, 1, "the pool connects anew");
  });
}
