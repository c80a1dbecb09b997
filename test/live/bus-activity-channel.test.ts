import test from "ava";
import type { DeliveryActivity } from "../../src/domain/delivery-activity.js";
import type { RelayResult } from "../../src/domain/relay.js";
import { BusActivityChannel } from "../../src/live/bus-activity-channel.js";
import type { MessageBus } from "../../src/live/message-bus.js";

/** A bus between instances of one process: every started end hears every message, its own too, a turn later. */
class InMemoryBus {
  readonly #ends = new Set<(topic: string, payload: string) => void>();
  sent: { topic: string; payload: string }[] = [];

  end(): MessageBus {
    let listener: ((topic: string, payload: string) => void) | undefined;
    return {
      start: async (onMessage, onConnected) => {
        listener = onMessage;
        this.#ends.add(onMessage);
        onConnected();
      },
      send: async (topic, payload) => {
        this.sent.push({ topic, payload });
        for (const hear of this.#ends) setImmediate(() => hear(topic, payload));
      },
      stop: async () => {
        if (listener) this.#ends.delete(listener);
      },
    };
  }
}

const settle = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

const activity = (jobId: string): DeliveryActivity => ({
  kind: "accepted",
  at: new Date("2026-11-23T01:00:00Z"),
  clientId: "cli_1",
  subscriptionId: "sub_1",
  event: "Order.Created",
  jobId,
});

function instance(bus: InMemoryBus, name: string, now: () => number = Date.now) {
  const heard: DeliveryActivity[] = [];
  const results: RelayResult[] = [];
  const channel = new BusActivityChannel(
    bus.end(),
    name,
    (error) => {
      throw error;
    },
    now,
    1_000,
  );
  return {
    channel,
    heard,
    results,
    start: () =>
      channel.start(
        (activities) => heard.push(...activities),
        (result) => results.push(result),
      ),
  };
}

test("activities flow only towards an instance that announced watchers, and never back to their sender", async (t) => {
  const bus = new InMemoryBus();
  const a = instance(bus, "a");
  const b = instance(bus, "b");
  await a.start();
  await b.start();
  await settle();
  t.false(a.channel.othersWatching);

  b.channel.setWatching(true);
  await settle();
  t.true(a.channel.othersWatching);
  t.false(b.channel.othersWatching, "its own announcement does not count");
  a.channel.publish([activity("1")]);
  a.channel.publish([activity("2")]);
  await settle();
  t.deepEqual(
    b.heard.map((each) => each.jobId),
    ["1", "2"],
  );
  t.is(bus.sent.filter((message) => message.topic === "wh_live_activity").length, 1, "one message per turn of the event loop");
  t.deepEqual(a.heard, []);

  b.channel.setWatching(false);
  await settle();
  t.false(a.channel.othersWatching);
  await a.channel.stop();
  await b.channel.stop();
});

test("an instance that connects asks, and one with watchers answers at once", async (t) => {
  const bus = new InMemoryBus();
  const b = instance(bus, "b");
  await b.start();
  b.channel.setWatching(true);
  await settle();
  const c = instance(bus, "c");
  await c.start();
  await settle();
  t.true(c.channel.othersWatching);
  await b.channel.stop();
  await c.channel.stop();
});

test("an instance that stops announcing counts as watching for three intervals, then not", async (t) => {
  let now = 0;
  const bus = new InMemoryBus();
  const a = instance(bus, "a", () => now);
  await a.start();
  bus.end().send("wh_live_interest", JSON.stringify({ s: "gone", w: true }));
  await settle();
  now = 2_999;
  t.true(a.channel.othersWatching);
  now = 3_000;
  t.false(a.channel.othersWatching);
  await a.channel.stop();
});

test("a relay answer reaches every other instance; foreign messages are ignored", async (t) => {
  const bus = new InMemoryBus();
  const a = instance(bus, "a");
  const b = instance(bus, "b");
  await a.start();
  await b.start();
  const result = { subscriptionId: "sub_1", jobId: "ntf_1", attempt: 0, durationMs: 4, statusCode: 200, responseBody: "ok" };
  b.channel.publishRelayResult(result);
  bus.end().send("wh_live_activity", "not ours");
  await settle();
  t.deepEqual(a.results, [result]);
  t.deepEqual(a.heard, []);
  await a.channel.stop();
  await b.channel.stop();
});
