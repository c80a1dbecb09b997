import test from "ava";
import pg from "pg";
import { ConflictError } from "../../src/domain/errors.js";
import { inTransaction } from "../../src/store/postgres/transaction.js";
import { postgresOnly } from "../helpers/stores.js";

const postgres = postgresOnly(test, "transactions on a server connection");

if (postgres) {
  test("a transaction its work refuses (a domain error) is rolled back and its connection reused; any other failure drops it", async (t) => {
    const store = await postgres.create();
    t.teardown(() => store.cleanup());
    const pool = new pg.Pool({ connectionString: store.env.DATABASE_URL as string, max: 1 });
    t.teardown(() => pool.end());
    await pool.query("CREATE TABLE tx_probe (n int)");
    const pid = async () => (await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid;
    const first = await pid();

    const refusal = new ConflictError("refused on purpose");
    const refused = inTransaction(pool, async (client) => {
      await client.query("INSERT INTO tx_probe VALUES (1)");
      throw refusal;
    });
    t.is(await t.throwsAsync(refused), refusal);
    t.is((await pool.query("SELECT count(*)::int AS n FROM tx_probe")).rows[0]?.n, 0, "rolled back");
    t.is(await pid(), first, "the same connection, back in the pool");

    const failed = inTransaction(pool, async (client) => {
      await client.query("INSERT INTO tx_probe VALUES (2)");
      throw new Error("something unexpected");
    });
    await t.throwsAsync(failed, { message: "something unexpected" });
    t.is((await pool.query("SELECT count(*)::int AS n FROM tx_probe")).rows[0]?.n, 0, "rolled back");
    t.not(await pid(), first, "a new connection: an unexpected failure's is not trusted again");
  });
}
