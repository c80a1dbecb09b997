import test from "ava";
import { StoreFullError } from "../../src/domain/errors.js";
import { asStoreFull } from "../../src/store/postgres/store-space.js";
import { StoreSpace } from "../../src/store/store-space.js";
import { eventually } from "../helpers/eventually.js";

const diskFull = (message: string) => Object.assign(new Error(message), { code: "53100" });

/** Asked each millisecond, for up to a second. */
const QUICK = { timeoutMs: 1_000, intervalMs: 1 };

test("a disk_full error becomes a StoreFullError naming what the database said; others pass unchanged", (t) => {
  const full = asStoreFull(diskFull('could not extend file "base/5/1": No space left on device'));
  t.true(full instanceof StoreFullError);
  t.is((full as StoreFullError).detail, 'could not extend file "base/5/1": No space left on device');
  t.regex((full as StoreFullError).message, /^the store is full \(could not extend .*\): nothing was written; free space/);
  const other = Object.assign(new Error("duplicate key"), { code: "23505" });
  t.is(asStoreFull(other), other);
});

test("roomy → full on a failure, full while probes fail (with their reason), roomy again once one succeeds", async (t) => {
  let room = false;
  let probes = 0;
  const changes: Array<string | undefined> = [];
  const space = new StoreSpace({
    probe: async () => {
      probes++;
      if (!room) throw asStoreFull(diskFull("still no space"));
    },
    probeEveryMs: 5,
    onChange: (reason) => changes.push(reason),
    now: () => new Date("2026-01-02T03:04:05Z"),
  });
  t.teardown(() => space.stop());
  t.deepEqual(space.report(), { ok: true });
  t.is(probes, 0, "no probe while roomy");

  space.noticed(asStoreFull(diskFull("no space")) as StoreFullError);
  space.noticed(asStoreFull(diskFull("no space again")) as StoreFullError);
  t.deepEqual(changes, ["no space"], "told once as it turns full");
  t.deepEqual(space.report(), {
    ok: false,
    reason: "the store is full (since 2026-01-02T03:04:05.000Z): no space again; free space on its disk",
  });
  await eventually("two probes", () => probes >= 2, QUICK);
  t.regex(String(space.report().reason), /: still no space; /);

  room = true;
  await eventually("roomy again", () => space.report().ok, QUICK);
  t.deepEqual(changes, ["no space", undefined]);
  const after = probes;
  // An absence can only be watched for a while: six probe intervals.
  await new Promise((resolve) => setTimeout(resolve, 30));
  t.is(probes, after, "no probe once roomy");
});

test("stopped, it probes no more and ignores failures", (t) => {
  const space = new StoreSpace({ probe: async () => {}, probeEveryMs: 5, onChange: () => t.fail("told of a change after stop") });
  space.stop();
  space.noticed(asStoreFull(diskFull("no space")) as StoreFullError);
  t.deepEqual(space.report(), { ok: true });
});
