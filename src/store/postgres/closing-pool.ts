import type pg from "pg";

/** How long closing waits for the server to see each connection out. */
const CLOSE_WAIT_MS = 3_000;

/**
 * `pool.end()` that resolves once every connection has closed. pg-pool's own
 * resolves as soon as it has asked its idle clients to end, while their
 * sockets are still open: a server that ends them meanwhile (a database
 * dropped WITH (FORCE), a shutdown) then reaches clients whose owners have
 * stopped listening. Call `trackConnections` when the pool is made. It
 * waits at most `waitMs` for the sockets.
 */
export function trackConnections(pool: pg.Pool, waitMs = CLOSE_WAIT_MS): () => Promise<void> {
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
    // A server that went silent (a network partition) would hold a socket until TCP gives up, minutes later.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  };
}
