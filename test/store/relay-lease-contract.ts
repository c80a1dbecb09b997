import type { TestFn } from "ava";
import { newId } from "../../src/domain/ids.js";
import type { Store } from "../../src/domain/ports.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";

const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second));

/** Temporary relay subscriptions' leases (domain/relay-leases.ts), on every store. */
export function relayLeaseContract(test: TestFn, name: string, open: () => Promise<Store>): void {
  test(`${name}: a lease is renewed, listed once it ended, and ends its subscription only if still ended`, async (t) => {
    const { clients, subscriptions } = await open();
    const owner = await clients.ensureWithKey("relay-leases", newId("cli"));
    const leased = subscriptionRecord(owner.id, { url: "relay:a", leaseExpiresAt: at(10) });
    const renewed = subscriptionRecord(owner.id, { url: "relay:b", leaseExpiresAt: at(10) });
    const kept = subscriptionRecord(owner.id, { url: "relay:c" });
    for (const each of [leased, renewed, kept]) await subscriptions.insert(each);
    t.deepEqual((await subscriptions.get(leased.id))?.leaseExpiresAt, at(10));

    await subscriptions.renewLeases([renewed.id, kept.id], at(30));
    t.deepEqual((await subscriptions.get(renewed.id))?.leaseExpiresAt, at(30));
    t.is((await subscriptions.get(kept.id))?.leaseExpiresAt, undefined, "a subscription without a lease gets none");
    const ended = await subscriptions.listLeaseEnded(at(20), 100);
    t.true(ended.includes(leased.id));
    t.false(ended.includes(renewed.id) || ended.includes(kept.id));

    t.false(await subscriptions.deleteLeaseEnded(renewed.id, at(20)), "renewed meanwhile: kept");
    t.false(await subscriptions.deleteLeaseEnded(kept.id, at(20)), "no lease: kept");
    t.true(await subscriptions.deleteLeaseEnded(leased.id, at(20)));
    t.is(await subscriptions.get(leased.id), undefined);
    t.truthy(await subscriptions.get(renewed.id));
  });
}
