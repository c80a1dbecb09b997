import test from "ava";
import { adminAuth, createClient } from "../helpers/admin.js";
import { rest, startTestService } from "../helpers/service.js";
import { storeTargets, testOn } from "../helpers/stores.js";

const BASE = "/api/webhookSubscription";

for (const target of storeTargets()) {
  testOn(test, target)(`${target.name}: a client holds at most its quota of subscriptions, and no exact duplicate`, async (t) => {
    const store = await target.create();
    const running = await startTestService({ ...store.env, MAX_SUBSCRIPTIONS_PER_CLIENT: "3" });
    t.teardown(async () => {
      await running.service.stop();
      await store.cleanup();
    });
    const base = running.baseUrl;
    const owner = await createClient(base, "Quota");
    const subscribe = (url: string, event = "Order.Created", fields: Record<string, unknown> = {}) =>
      rest(base, "POST", BASE, { event, url, ...fields }, owner.auth);

    const first = await subscribe("http://127.0.0.1:9/a");
    t.is(first.status, 200, first.text);
    const duplicate = await subscribe("http://127.0.0.1:9/a");
    t.is(duplicate.status, 409, duplicate.text);
    t.is(duplicate.json.code, "already_exists");
    t.regex(duplicate.json.message as string, new RegExp(`subscription ${first.json.id as string} already sends Order.Created`));
    t.is((await subscribe("http://127.0.0.1:9/a", "Order.Shipped")).status, 200, "another event to the same URL is no duplicate");
    const otherScheme = await subscribe("http://127.0.0.1:9/a", "Order.Created", { signatureScheme: "STANDARD_WEBHOOKS" });
    t.is(otherScheme.status, 200, "nor is another signature scheme: how a URL switches schemes");

    const refused = await subscribe("http://127.0.0.1:9/b");
    t.is(refused.status, 429, refused.text);
    t.is(refused.json.code, "resource_exhausted");
    t.regex(refused.json.message as string, /a client may hold 3 subscriptions/);
    const relay = await rest(base, "POST", BASE, { event: "Order.Created", url: "", relay: true }, owner.auth);
    t.is(relay.status, 429, "relay subscriptions count too");
    t.is((await rest(base, "DELETE", `${BASE}/${first.json.id as string}`, undefined, owner.auth)).status, 200);
    t.is((await subscribe("http://127.0.0.1:9/b")).status, 200, "a deleted one frees its place");

    // A quota of its own, higher or lower than the service's.
    t.is((await rest(base, "PATCH", `/api/internal/clients/${owner.id}`, { maxSubscriptions: 4 }, adminAuth)).status, 200);
    t.is((await subscribe("http://127.0.0.1:9/c")).status, 200);
    const atFour = await subscribe("http://127.0.0.1:9/d");
    t.is(atFour.status, 429);
    t.regex(atFour.json.message as string, /a client may hold 4 subscriptions/);
    t.is((await rest(base, "PATCH", `/api/internal/clients/${owner.id}`, { maxSubscriptions: 1 }, adminAuth)).status, 200);
    const listed = await rest(base, "GET", BASE, undefined, owner.auth);
    t.is((listed.json.subscriptions as unknown[]).length, 4, "lowering the quota deletes none");

    // Creates at once: never past the quota, and one of identical ones.
    const racer = await createClient(base, "Racer");
    const racing = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        rest(base, "POST", BASE, { event: "Order.Created", url: `http://127.0.0.1:9/r${i}` }, racer.auth),
      ),
    );
    t.is(racing.filter((answer) => answer.status === 200).length, 3, racing.map((answer) => answer.status).join(","));
    t.true(racing.filter((answer) => answer.status !== 200).every((answer) => answer.status === 429));
    const twinOwner = await createClient(base, "Twins");
    const twins = await Promise.all(
      Array.from({ length: 4 }, () => rest(base, "POST", BASE, { event: "Order.Created", url: "http://127.0.0.1:9/twin" }, twinOwner.auth)),
    );
    t.deepEqual(twins.map((answer) => answer.status).sort(), [200, 409, 409, 409]);

    // Nor can a change of URL, or an empty query, make a copy of another subscription.
    const twin = twins.find((answer) => answer.status === 200)?.json.id as string;
    const emptyQuery = await rest(base, "POST", BASE, { event: "Order.Created", url: "http://127.0.0.1:9/twin?" }, twinOwner.auth);
    t.is(emptyQuery.status, 409, emptyQuery.text);
    const other = await rest(base, "POST", BASE, { event: "Order.Created", url: "http://127.0.0.1:9/other" }, twinOwner.auth);
    t.is(other.status, 200, other.text);
    const moved = await rest(base, "PATCH", `${BASE}/${other.json.id as string}`, { url: "http://127.0.0.1:9/twin" }, twinOwner.auth);
    t.is(moved.status, 409, moved.text);
    t.is(moved.json.code, "already_exists");
    t.regex(moved.json.message as string, new RegExp(`subscription ${twin} already sends Order.Created`));
    const unchanged = await rest(base, "PATCH", `${BASE}/${twin}`, { url: "http://127.0.0.1:9/twin", description: "kept" }, twinOwner.auth);
    t.is(unchanged.status, 200, `its own URL is no duplicate: ${unchanged.text}`);
    const after = await rest(base, "GET", `${BASE}/${other.json.id as string}`, undefined, twinOwner.auth);
    t.is(after.json.url, "http://127.0.0.1:9/other", "the refused change left it as it was");
  });
}
