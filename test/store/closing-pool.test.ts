import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import test from "ava";
import pg from "pg";
import { trackConnections } from "../../src/store/postgres/closing-pool.js";
import { postgresOnly } from "../helpers/stores.js";

const postgres = postgresOnly(test, "closing a pool");

if (postgres) {
  test("a tracked pool's end resolves only once the server has no connection of it left", async (t) => {
    const store = await postgres.create();
    t.teardown(() => store.cleanup());
    const url = store.env.DATABASE_URL as string;
    const applicationName = `closing-pool-${process.pid}`;
    const pool = new pg.Pool({ connectionString: url, application_name: applicationName, max: 6 });
    pool.on("error", () => {});
    const end = trackConnections(pool);
    // Six connections: four idle in the pool, one destroyed by its user, one handed back mid-way.
    const clients = await Promise.all(Array.from({ length: 6 }, () => pool.connect()));
    await Promise.all(clients.map((client) => client.query("SELECT 1")));
    let closed = 0;
    for (const client of clients) client.once("end", () => closed++);
    for (const client of clients.slice(0, 4)) client.release();
    clients[4]?.release(true);
    const ending = end();
    clients[5]?.release();
    await ending;
    t.is(closed, clients.length, "every connection had closed when end() resolved");

    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const { rows } = await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1", [applicationName]);
      t.is(rows[0].n, 0);
    } finally {
      await admin.end();
    }
  });

  test("a tracked pool's end gives up waiting on a server that went silent", async (t) => {
    const store = await postgres.create();
    t.teardown(() => store.cleanup());
    const target = new URL(store.env.DATABASE_URL as string);
    // A proxy that forwards until frozen, then neither forwards nor closes: a network partition.
    let frozen = false;
    const sockets: Socket[] = [];
    const proxy = createServer({ allowHalfOpen: true }, (inbound) => {
      const outbound = connect(Number(target.port), target.hostname);
      sockets.push(inbound, outbound);
      inbound.on("data", (chunk) => frozen || outbound.write(chunk));
      outbound.on("data", (chunk) => frozen || inbound.write(chunk));
      inbound.on("end", () => frozen || outbound.end());
      outbound.on("end", () => frozen || inbound.end());
      for (const socket of [inbound, outbound]) socket.on("error", () => {});
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    t.teardown(() => {
      for (const socket of sockets) socket.destroy();
      proxy.close();
    });
    const url = new URL(target);
    url.host = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
    pool.on("error", () => {});
    const end = trackConnections(pool, 300);
    const client = await pool.connect();
    await client.query("SELECT 1");
    client.release();
    frozen = true;
    await end();
    t.true(pool.ended);
  });

  test("a pool that never connected ends at once", async (t) => {
    const pool = new pg.Pool({ connectionString: "postgres://postgres@127.0.0.1:5432/postgres" });
    await trackConnections(pool)();
    t.true(pool.ended);
  });
}
