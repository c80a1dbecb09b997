import * as grpc from "@grpc/grpc-js";
import test from "ava";
import { adminAuth } from "../helpers/admin.js";
import { Receiver } from "../helpers/receiver.js";
import { API_KEY, rest, sharedService } from "../helpers/service.js";
import { grpcWatch } from "../helpers/watch.js";

// A watcher may fall 20 activities behind; the test makes far more while one does not read.
const running = sharedService(test, { WATCHER_BUFFER_SIZE: "20" });

test("a watcher that stops reading is cut off with resource_exhausted, not buffered without bound", async (t) => {
  const receiver = await Receiver.start();
  const base = `http://127.0.0.1:${running.service.port}`;
  const subscriptions = 20;
  for (let index = 0; index < subscriptions; index++) {
    const created = await rest(base, "POST", "/api/webhookSubscription", { event: "Order.Created", url: `${receiver.url}?n=${index}` });
    t.is(created.status, 200, created.text);
  }
  const clients = await rest(base, "GET", "/api/internal/clients", undefined, adminAuth);
  const clientId = (clients.json.clients as { id: string; name: string }[])[0]?.id;

  const { call, client } = grpcWatch(running.service.port, API_KEY);
  let received = 0;
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  // The stream's end is read from its status; grpc-js also emits it as an error.
  call.on("error", () => {});
  const ready = new Promise<void>((resolve) => call.once("data", () => resolve()));
  call.on("data", () => received++);
  await ready;
  call.pause();

  // 25 publishes of 20 notifications: 2 000 activities, far beyond the 64 KiB HTTP/2 window and the 20 the watcher may hold.
  const publishes = 25;
  for (let index = 0; index < publishes; index++) {
    const published = await rest(
      base,
      "POST",
      "/api/internal/events/publish",
      { clientId, event: "Order.Created", payload: { OrderId: `ord_${index}`, CustomerId: "cus_1", TotalAmount: 1, Currency: "EUR" } },
      adminAuth,
    );
    t.is(published.status, 200, published.text);
  }
  await receiver.waitFor(publishes * subscriptions, 60_000);

  call.resume();
  const status = await ended;
  t.is(status.code, grpc.status.RESOURCE_EXHAUSTED, status.details);
  // (grpc-js leaves the reserved characters of grpc-message percent-encoded.)
  t.regex(status.details, /watcher cut off.*fell more than 20 activities behind.*reconnect with since/);
  t.true(received < publishes * subscriptions * 4, `received ${received} of ${publishes * subscriptions * 4}`);
  client.close();
  await receiver.close();

  // The service itself is fine: a new watcher is served.
  const again = grpcWatch(running.service.port, API_KEY);
  const cancelled = new Promise<grpc.StatusObject>((resolve) => again.call.on("status", resolve));
  again.call.on("error", () => {});
  await new Promise<void>((resolve) => again.call.once("data", () => resolve()));
  again.call.cancel();
  t.is((await cancelled).code, grpc.status.CANCELLED);
  again.client.close();
});
