import test from "ava";
import { EventCatalog } from "../../src/domain/event-catalog.js";
import type { EventTypeStore } from "../../src/domain/ports.js";
import { storeForFile } from "../helpers/opened-store.js";

// The catalog's cache in front of a real store (embedded PGlite), counting the store's full reads.
const opened = storeForFile(test);

/** The first full read answers only once `holdFirst` settles (a slow read, overtaken by a change). */
function countingCatalog(holdFirst?: Promise<void>): { catalog: EventCatalog; lists: () => number } {
  const store = opened().store.eventTypes;
  let lists = 0;
  const counted: EventTypeStore = Object.assign(Object.create(store) as EventTypeStore, {
    list: async () => {
      const first = lists++ === 0;
      const types = await store.list();
      if (first) await holdFirst;
      return types;
    },
  });
  return { catalog: new EventCatalog(counted), lists: () => lists };
}

test.serial("publishes arriving together while the cache is cold share one read of the event types", async (t) => {
  const { catalog, lists } = countingCatalog();
  await catalog.seed([{ name: "Order.Created", description: "", samplePayload: {} }]);
  const types = await Promise.all(Array.from({ length: 20 }, () => catalog.require("Order.Created")));
  t.true(types.every((type) => type.name === "Order.Created"));
  t.is(lists(), 1);
  await catalog.require("Order.Created");
  t.is(lists(), 1, "a fresh cache answers without reading");
});

test.serial("a type registered while a read is under way is listed by the next caller", async (t) => {
  let release = () => {};
  const { catalog, lists } = countingCatalog(new Promise((resolve) => (release = resolve)));
  const before = catalog.list();
  await catalog.register({ name: "Ticket.Opened", description: "opened", samplePayload: {} });
  const after = await catalog.list();
  t.true(
    after.some((type) => type.name === "Ticket.Opened"),
    "the read started before the change is not shared after it",
  );
  release();
  t.false((await before).some((type) => type.name === "Ticket.Opened"));
  t.true(
    (await catalog.list()).some((type) => type.name === "Ticket.Opened"),
    "the older read did not replace the cache",
  );
  t.is(lists(), 2);
});
