import test from "ava";
import { ValidationError } from "../../src/domain/errors.js";
import { DEFAULT_RETRY_SCHEDULE, MAX_RETRIES, parseDuration, parseRetrySchedule, retryDelay } from "../../src/domain/retry-policy.js";

test("durations in ms, s, m, h and d", (t) => {
  t.is(parseDuration("250ms"), 250);
  t.is(parseDuration("10s"), 10_000);
  t.is(parseDuration("1.5m"), 90_000);
  t.is(parseDuration("2h"), 7_200_000);
  t.is(parseDuration("1d"), 86_400_000);
  for (const bad of ["", "10", "s", "-1s", "1w", "ten seconds"]) t.throws(() => parseDuration(bad), { instanceOf: ValidationError });
});

test("a schedule has one to five delays; the default spreads five over about a day", (t) => {
  const defaults = parseRetrySchedule(DEFAULT_RETRY_SCHEDULE);
  t.is(defaults.length, MAX_RETRIES);
  const total = defaults.reduce((a, b) => a + b, 0);
  t.true(total > 18 * 3_600_000 && total < 30 * 3_600_000, `${total} ms`);
  t.deepEqual(parseRetrySchedule("10s,1m"), [10_000, 60_000]);
  t.throws(() => parseRetrySchedule("1s,1s,1s,1s,1s,1s"), { message: /1 to 5 delays/ });
});

const policy = { delaysMs: [1000, 2000, 3000], jitter: 0.2, maxRetryAfterMs: 60_000 };

test("retry n waits the nth delay, spread by the jitter, and stops after the last", (t) => {
  t.is(retryDelay({ ...policy, jitter: 0 }, 2), 2000);
  t.is(
    retryDelay(policy, 1, undefined, () => 0),
    800,
  );
  t.is(
    retryDelay(policy, 1, undefined, () => 1),
    1200,
  );
  for (let i = 0; i < 100; i++) {
    const delay = retryDelay(policy, 3) as number;
    t.true(delay >= 2400 && delay <= 3600);
  }
  t.is(retryDelay(policy, 4), null);
});

test("a receiver's Retry-After wins, capped, but never adds retries", (t) => {
  t.is(retryDelay(policy, 1, 5000), 5000);
  t.is(retryDelay(policy, 1, 10 * 60_000), 60_000);
  t.is(retryDelay(policy, 1, -5), 0);
  t.is(retryDelay(policy, 4, 5000), null);
});
