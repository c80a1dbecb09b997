import test, { type ExecutionContext } from "ava";
import { adminAuth } from "../helpers/admin.js";
import { runCli, watchCli } from "../helpers/cli.js";
import { eventually } from "../helpers/eventually.js";
import { kill, restartableService, spawnService } from "../helpers/process.js";
import { API_KEY, rest } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

/** Short, so that the test waits seconds for a lease to end: renewals and sweeps come every third of it. */
const LEASE_MS = 2_000;
/** Asked every 200 ms: the service tells nobody when a lease ends or is renewed. */
const LEASE_POLL = { intervalMs: 200 };

/** `listen` started against `baseUrl` (killed when the test ends), the relay subscription it made and that one's REST path. */
async function listenWithRelay(t: ExecutionContext, baseUrl: string) {
  const env = { WEBHOOKS_URL: baseUrl, WEBHOOKS_API_KEY: API_KEY };
  // Nothing is forwarded in these tests: the local receiver's URL is never called.
  const listen = watchCli(["--json", "listen", "--forward-to", "http://127.0.0.1:9/unused", "--events", "Order.Created"], env);
  t.teardown(() => void listen.child.kill("SIGKILL"));
  await listen.waitFor("stdout", /"subscriptions"/);
  const relay = (JSON.parse(listen.output.stdout.split("\n")[0] ?? "") as { subscriptions: { id: string }[] }).subscriptions[0];
  if (!relay) throw new Error("no relay printed");
  return { env, listen, relay, path: `/api/webhookSubscription/${relay.id}` };
}

/** Waits until `firstEnd` plus a lease has passed and the relay at `path`, read from `baseUrl`, has a lease ending after it. */
function renewedPastFirstEnd(baseUrl: string, path: string, firstEnd: number): Promise<true> {
  return eventually(
    "the lease is renewed past its first end",
    async () => {
      const now = await rest(baseUrl, "GET", path);
      return Date.now() > firstEnd + LEASE_MS && Date.parse(String(now.json.leaseExpiresAt)) > firstEnd + LEASE_MS;
    },
    LEASE_POLL,
  );
}

for (const target of storeTargets()) {
  test.serial(
    `${target.name}: listen's relay subscription lives while listen runs, and is deleted once its lease ends after the service was killed`,
    async (t) => {
      const service = await restartableService(t, target, { RELAY_LEASE: `${LEASE_MS}ms` });
      const { env, listen, relay, path } = await listenWithRelay(t, service.baseUrl);

      // While listen's stream is open its lease is renewed: the subscription outlives the lease it was created with.
      const created = await rest(service.baseUrl, "GET", path);
      const firstEnd = Date.parse(String(created.json.leaseExpiresAt));
      t.true(firstEnd > Date.now() - LEASE_MS, `a lease is shown: ${created.text}`);
      await renewedPastFirstEnd(service.baseUrl, path, firstEnd);
      t.is((await rest(service.baseUrl, "GET", path)).status, 200, "kept past its first lease while listen runs");

      // The service is killed: listen cannot remove its relay, and says so.
      await service.stop("SIGKILL");
      await listen.waitFor("stderr", /reconnecting \(Ctrl-C to stop\)/);
      listen.child.kill("SIGINT");
      t.is(await listen.closed, 1);
      t.regex(listen.output.stderr, new RegExp(`error: could not remove the temporary relay subscription ${relay.id} `));
      t.regex(listen.output.stderr, /the service deletes it by itself once its lease ends/);
      t.notRegex(listen.output.stderr, /temporary relay subscriptions removed/);

      // Restarted, the service deletes it once its lease ended: it is gone from the list, and an event reaches nobody.
      await service.start();
      await eventually(
        "the relay subscription is deleted",
        async () => (await rest(service.baseUrl, "GET", path)).status === 404,
        LEASE_POLL,
      );
      const listed = await runCli(["--json", "subscriptions", "list"], env);
      t.is(listed.code, 0, listed.stderr);
      t.notRegex(listed.stdout, new RegExp(relay.id));
      const clients = await rest(service.baseUrl, "GET", "/api/internal/clients", undefined, adminAuth);
      const [client] = clients.json.clients as { id: string }[];
      const published = await rest(
        service.baseUrl,
        "POST",
        "/api/internal/events/publish",
        { clientId: client?.id, event: "Order.Created", payload: { OrderId: "o1", CustomerId: "c1", TotalAmount: 1, Currency: "EUR" } },
        adminAuth,
      );
      t.is(published.status, 200, published.text);
      t.deepEqual(published.json.jobIds, [], "no notification goes to the deleted relay");
    },
  );
}

for (const target of storeTargets().filter((each) => each.name !== "pglite")) {
  test.serial(
    `${target.name}: with two instances, the one listen is not connected to keeps its relay while listen runs, and deletes it once listen and its instance are killed`,
    async (t) => {
      const connected = await restartableService(t, target, { RELAY_LEASE: `${LEASE_MS}ms` });
      const other = await spawnService(connected.env);
      t.teardown(() => kill(other, "SIGKILL"));
      const { listen, path } = await listenWithRelay(t, connected.baseUrl);

      // Both instances sweep; the renewals of the connected one's stream keep the relay past its first lease.
      const firstEnd = Date.parse(String((await rest(other.baseUrl, "GET", path)).json.leaseExpiresAt));
      await renewedPastFirstEnd(other.baseUrl, path, firstEnd);
      t.is((await rest(other.baseUrl, "GET", path)).status, 200);

      // listen dies without a word, and so does its instance: nobody renews the lease, and the other instance deletes the relay.
      listen.child.kill("SIGKILL");
      await listen.closed;
      await connected.stop("SIGKILL");
      await eventually(
        "the relay subscription is deleted",
        async () => (await rest(other.baseUrl, "GET", path)).status === 404,
        LEASE_POLL,
      );
    },
  );
}
