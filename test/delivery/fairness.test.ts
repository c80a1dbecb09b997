import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import test from "ava";
import { adminAuth, createClient } from "../helpers/admin.js";
import { postPublish, postSample, postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, serviceOn } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

/**
 * A receiver that accepts connections and never answers, until `recover()`:
 * then it answers everything held and everything after with 200.
 */
class HungReceiver {
  readonly held: ServerResponse[] = [];
  /** X-JobId of every request answered 200. */
  readonly delivered = new Set<string>();
  #inFlight = 0;
  maxInFlight = 0;
  #recovered = false;
  #waiters: Array<() => void> = [];
  readonly #server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const jobId = String(req.headers["x-jobid"]);
      const answer = () => {
        this.#inFlight--;
        this.delivered.add(jobId);
        res.writeHead(200).end("ok");
        for (const wake of this.#waiters.splice(0)) wake();
      };
      this.#inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.#inFlight);
      if (this.#recovered) answer();
      else {
        this.held.push(res);
        res.once("close", () => {
          if (!res.writableEnded) this.#inFlight--;
        });
        (res as ServerResponse & { answer?: () => void }).answer = answer;
      }
      for (const wake of this.#waiters.splice(0)) wake();
    });
  });

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    return this;
  }

  url(query: string): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hook?${query}`;
  }

  recover(): void {
    this.#recovered = true;
    for (const res of this.held.splice(0))
      if (!res.writableEnded && !res.destroyed) (res as ServerResponse & { answer: () => void }).answer();
  }

  /** Resolves once `condition` holds, re-checked at every request and answer; rejects after `timeoutMs`. */
  async until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 250));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

const PER_ENDPOINT = 16;
const FLOOD = 1000;
const SUBSCRIPTIONS = 10;

for (const target of storeTargets()) {
  test.serial(
    `${target.name}: with one endpoint hung and ${FLOOD} pending for it, another client's sample arrives within 2 s; nothing is lost once it recovers`,
    async (t) => {
      t.timeout(180_000);
      const hung = await new HungReceiver().start();
      const healthy = await Receiver.start();
      t.teardown(async () => {
        await hung.close();
        await healthy.close();
      });
      const { baseUrl } = await serviceOn(t, target, {
        // A hung request holds its slot for the whole test.
        DELIVERY_TIMEOUT_MS: "120000",
        DELIVERY_ENDPOINT_CONCURRENCY: String(PER_ENDPOINT),
        SCHEDULER_POLL_MS: "1000",
      });
      // Before the service stops (teardowns run last first).
      t.teardown(() => hung.recover());

      // Client B: ten subscriptions on one hung origin, then a flood of a thousand notifications.
      const noisy = await createClient(baseUrl, "Noisy neighbour");
      for (let i = 0; i < SUBSCRIPTIONS; i++) {
        const created = await postSubscription(baseUrl, { event: "Order.Shipped", url: hung.url(`s=${i}`) }, noisy.auth);
        t.is(created.status, 200, created.text);
      }
      const accepted = new Set<string>();
      for (let batch = 0; batch < FLOOD / SUBSCRIPTIONS; batch += 20) {
        const published = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            postPublish(baseUrl, { clientId: noisy.id, event: "Order.Shipped", payload: { OrderId: `o${batch + i}` } }, adminAuth),
          ),
        );
        for (const p of published) {
          t.is(p.status, 200, p.text);
          for (const id of p.json.jobIds as string[]) accepted.add(id);
        }
      }
      t.is(accepted.size, FLOOD);
      await hung.until(() => hung.held.length >= PER_ENDPOINT, 30_000, "the hung endpoint filling its slots");

      // Client A, meanwhile: its sample goes straight through.
      const quiet = await createClient(baseUrl, "Quiet client");
      const subscribed = await postSubscription(baseUrl, { event: "Order.Created", url: healthy.url }, quiet.auth);
      t.is(subscribed.status, 200, subscribed.text);
      const started = Date.now();
      const sample = await postSample(baseUrl, { event: "Order.Created", url: healthy.url }, quiet.auth);
      t.is(sample.status, 200, sample.text);
      await healthy.waitForJob(sample.json.jobId as string, 10_000);
      const latency = Date.now() - started;
      t.log(`${target.name}: the quiet client's sample arrived in ${latency} ms, next to ${FLOOD} pending for a hung endpoint`);
      t.true(latency < 2000, `arrived in ${latency} ms`);
      t.is(hung.maxInFlight, PER_ENDPOINT, "the hung endpoint held exactly its own slots");
      const health = await rest(baseUrl, "GET", "/healthz");
      t.is(health.status, 200, "a hung receiver is the receiver's problem, not the service's");

      // The receiver comes back: every accepted notification arrives, none lost.
      hung.recover();
      await hung.until(() => [...accepted].every((id) => hung.delivered.has(id)), 120_000, "every accepted notification delivered");
      t.is(hung.maxInFlight, PER_ENDPOINT, "never more than its cap in flight, also while catching up");
      t.is(hung.delivered.size, FLOOD);
    },
  );

  test(`${target.name}: a receiver that answers in 8 s, with 200 notifications queued, gets no attempt recorded as a timeout`, async (t) => {
    t.timeout(120_000);
    const slow = await Receiver.start(() => ({ status: 200, delayMs: 8_000 }));
    t.teardown(() => slow.close());
    const { baseUrl } = await serviceOn(t, target, {
      DELIVERY_TIMEOUT_MS: "15000",
      DELIVERY_ENDPOINT_CONCURRENCY: "100",
      DELIVERY_CLIENT_CONCURRENCY: "100",
    });
    const owner = await createClient(baseUrl, "Patient");
    const created = await postSubscription(baseUrl, { event: "Order.Shipped", url: slow.url }, owner.auth);
    t.is(created.status, 200, created.text);
    const ids: string[] = [];
    for (let i = 0; i < 200; i += 50) {
      const published = await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          postPublish(baseUrl, { clientId: owner.id, event: "Order.Shipped", payload: { OrderId: `o${i + j}` } }, adminAuth),
        ),
      );
      for (const p of published) ids.push(...(p.json.jobIds as string[]));
    }
    t.is(ids.length, 200);
    // Two rounds of 100 at 8 s each; the second round queued in the engine, not against its own timeout.
    await slow.waitFor(200, 60_000);
    const subscription = created.json.id as string;
    const deadline = Date.now() + 30_000;
    const attempts = async () => {
      const all = [];
      for (const id of ids) {
        const read = await rest(baseUrl, "GET", `/api/webhookSubscription/${subscription}/notifications/${id}`, undefined, owner.auth);
        all.push(...((read.json.attempts as Array<{ error?: string; statusCode?: number }>) ?? []));
      }
      return all;
    };
    let recorded = await attempts();
    while (recorded.length < 200 && Date.now() < deadline) recorded = await attempts();
    t.is(recorded.length, 200, "one attempt each");
    t.deepEqual(
      recorded.filter((a) => a.error?.startsWith("timeout")),
      [],
    );
    t.true(recorded.every((a) => a.statusCode === 200));
    t.is(new Set(slow.requests.map((r) => r.headers["x-jobid"])).size, 200, "no receiver saw a job twice");
    t.is(slow.requests.length, 200);
  });
}
