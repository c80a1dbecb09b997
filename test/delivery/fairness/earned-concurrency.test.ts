import test from "ava";
import { EarnedConcurrency } from "../../../src/delivery/fairness/earned-concurrency.js";

function setup(floor = 2, ceiling = 8) {
  let now = 0;
  const limits = new EarnedConcurrency({ floor, ceiling, slowMs: 1000, now: () => now });
  return {
    limits,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

test("a new key starts at the floor; fast answers with more waiting earn one each, up to the ceiling", (t) => {
  const { limits, advance } = setup();
  t.is(limits.floor, 2);
  t.is(limits.limit("e"), 2);
  for (let round = 0; round < 10; round++) {
    const started = Array.from({ length: limits.limit("e") }, () => limits.started("e"));
    advance(10);
    for (const at of started) limits.finished("e", at, true);
  }
  t.is(limits.limit("e"), 8, "doubling each round, stopped at the ceiling");
});

test("a fast answer with nothing more waiting earns nothing; once nothing is in flight the key is forgotten", (t) => {
  const { limits } = setup();
  const at = limits.started("e");
  limits.finished("e", at, false);
  t.is(limits.limit("e"), 2);
});

test("a slow answer puts the key back to the floor", (t) => {
  const { limits, advance } = setup();
  for (let i = 0; i < 4; i++) limits.finished("e", limits.started("e"), true);
  t.is(limits.limit("e"), 6);
  const slow = limits.started("e");
  advance(1500);
  limits.finished("e", slow, true);
  t.is(limits.limit("e"), 2);
});

test("a request in flight past slowMs holds the key at the floor before it even answers (a receiver that just hung)", (t) => {
  const { limits, advance } = setup();
  for (let i = 0; i < 6; i++) limits.finished("e", limits.started("e"), true);
  t.is(limits.limit("e"), 8, "it was fast");
  const hung = Array.from({ length: 8 }, () => limits.started("e"));
  advance(999);
  t.is(limits.limit("e"), 8, "not yet slow");
  advance(2);
  t.is(limits.limit("e"), 2, "its oldest request is past slowMs: no more for it");
  limits.finished("e", hung[0] as number, true);
  t.is(limits.limit("e"), 2, "still held while the rest hang");
});

test("an abandoned request frees its place and says nothing of the key's speed", (t) => {
  const { limits, advance } = setup();
  limits.finished("e", limits.started("e"), true);
  t.is(limits.limit("e"), 3);
  const never = limits.started("e");
  advance(5000);
  limits.abandoned("e", never);
  t.is(limits.limit("e"), 3, "not counted as slow: it never ran");
});
