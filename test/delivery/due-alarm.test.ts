import test from "ava";
import { DueAlarm } from "../../src/delivery/due-alarm.js";
import { FakeClock } from "../helpers/fake-clock.js";

function setup(maxPending = 100) {
  const clock = new FakeClock();
  const woken: number[] = [];
  const alarm = new DueAlarm({ stepMs: 20, maxPending, clock, onDue: () => woken.push(clock.now()) });
  return { clock, alarm, woken };
}

test("wakes once each due time is reached, rounded up to its step, with one timer at a time", (t) => {
  const { clock, alarm, woken } = setup();
  const start = clock.now();
  alarm.at(start + 1_005);
  alarm.at(start + 95);
  alarm.at(start + 2_000);
  t.is(clock.pending, 1, "one timer, for the earliest");
  clock.advance(100);
  t.deepEqual(woken, [start + 100]);
  clock.advance(1_000);
  t.deepEqual(woken, [start + 100, start + 1_020]);
  clock.advance(1_000);
  t.deepEqual(woken, [start + 100, start + 1_020, start + 2_000]);
  t.is(alarm.pending, 0);
  t.is(clock.pending, 0, "nothing left: no timer");
});

test("jobs falling due within one step wake it once", (t) => {
  const { clock, alarm, woken } = setup();
  const start = clock.now();
  for (let ms = 1; ms <= 20; ms++) alarm.at(start + ms);
  t.is(alarm.pending, 1);
  clock.advance(20);
  t.deepEqual(woken, [start + 20]);
});

test("an earlier due time re-arms the timer; one already past wakes at once", (t) => {
  const { clock, alarm, woken } = setup();
  const start = clock.now();
  alarm.at(start + 1_000);
  alarm.at(start + 200);
  t.is(clock.pending, 1);
  clock.advance(200);
  t.deepEqual(woken, [start + 200]);
  alarm.at(start - 5_000);
  clock.advance(0);
  t.deepEqual(woken, [start + 200, start + 200], "a time already past: at once");
  clock.advance(800);
  t.deepEqual(woken, [start + 200, start + 200, start + 1_000]);
});

test("keeps at most maxPending due times, the earliest; later ones are left to the poll", (t) => {
  const { clock, alarm, woken } = setup(3);
  const start = clock.now();
  for (const ms of [400, 300, 200, 100]) alarm.at(start + ms);
  t.is(alarm.pending, 3);
  alarm.at(start + 500);
  t.is(alarm.pending, 3, "past the last kept of a full list: dropped");
  clock.advance(1_000);
  t.deepEqual(woken, [start + 100, start + 200, start + 300]);
});

test("a due time past the longest timer Node sets (24.8 days) is waited for in steps, and wakes once", (t) => {
  const { clock, alarm, woken } = setup();
  const due = clock.now() + 30 * 24 * 3600_000;
  alarm.at(due);
  clock.advance(2 ** 31 - 1);
  t.deepEqual(woken, [], "not yet");
  t.is(clock.pending, 1, "re-armed for the rest");
  clock.advance(due - clock.now());
  t.deepEqual(woken, [due]);
});

test("stop forgets every due time, clears its timer and takes no more", (t) => {
  const { clock, alarm, woken } = setup();
  alarm.at(clock.now() + 100);
  alarm.stop();
  alarm.at(clock.now() + 50);
  t.is(clock.pending, 0);
  clock.advance(1_000);
  t.deepEqual(woken, []);
});
