import type pg from "pg";

/**
 * `pool.end()` that resolves once every connection has closed. pg-pool's own
 * resolves as soon as it has asked its idle clients to end, while their
 * sockets are still open: a server that ends them meanwhile (a database
 * dropped WITH (FORCE), a shutdown) then reaches clients whose owners have
 * stopped listening. Call `trackConnections` when the pool is made.
 */
export function trackConnections(pool: pg.Pool): () => Promise<void> {
  const open = new Set<pg.PoolClient>();
  let allClosed: (() => void) | undefined;
  pool.on("connect", (client) => open.add(client as pg.PoolClient));
  pool.on("remove", (client) => {
    open.delete(client as pg.PoolClient);
    if (open.size === 0) allClosed?.();
  });
  return async () => {
    const closed = open.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => (allClosed = resolve));
    await pool.end();
    await closed;
  };
}
