import test from "ava";
import { RemoteInterest } from "../../src/live/remote-interest.js";

test("QUIET until an announcement, WATCHING for three intervals after the last one, QUIET again after", (t) => {
  let now = 1_000;
  const interest = new RemoteInterest(100, () => now);
  t.false(interest.anyWatching);
  interest.heard("b", true);
  t.true(interest.anyWatching);
  now += 299;
  t.true(interest.anyWatching, "one lost announcement does not stop the flow");
  interest.heard("b", true);
  now += 299;
  t.true(interest.anyWatching);
  now += 1;
  t.false(interest.anyWatching);
});

test("an instance saying it has no watchers left is QUIET at once; others keep watching", (t) => {
  const now = 0;
  const interest = new RemoteInterest(100, () => now);
  interest.heard("b", true);
  interest.heard("c", true);
  interest.heard("b", false);
  t.true(interest.anyWatching);
  interest.heard("c", false);
  t.false(interest.anyWatching);
});
