import test from "ava";
import {
  createReceiver,
  type ErrorContext,
  IN_PROGRESS_RETRY_AFTER_SECONDS,
  InvalidSignatureError,
  MemorySeenStore,
  type RawRequest,
  type ReceiverOptions,
  type SeenStore,
  type VerifiedNotification,
} from "../../packages/receiver/src/index.js";
import { buildNotificationBody } from "../../src/domain/notification-body.js";
import { generateSigningKeyPair, type SigningKeyPair, signBody } from "../../src/domain/signature.js";

let key: SigningKeyPair;
let nextKey: SigningKeyPair;
test.before(async () => {
  [key, nextKey] = await Promise.all([generateSigningKeyPair(2048), generateSigningKeyPair(2048)]);
});

async function request(jobId: string, options: { attempt?: number; signer?: SigningKeyPair; orderId?: string } = {}): Promise<RawRequest> {
  const body = buildNotificationBody("Order.Cancelled", { OrderId: options.orderId ?? "ord_1", Reason: "CustomerRequest" }, new Date());
  return {
    body: Buffer.from(body),
    headers: {
      "x-signature": await signBody(body, (options.signer ?? key).privateKeyPem),
      "x-jobid": jobId,
      "x-jobattempt": String(options.attempt ?? 0),
    },
  };
}

function recording(options: Partial<ReceiverOptions> = {}) {
  const calls: VerifiedNotification[] = [];
  const errors: Array<{ error: unknown; context: ErrorContext }> = [];
  const receiver = createReceiver({
    keys: [key.publicKeyPem],
    onError: (error, context) => errors.push({ error, context }),
    ...options,
    async onNotification(notification) {
      calls.push(notification);
      await options.onNotification?.(notification);
    },
  });
  return { receiver, calls, errors };
}

const json = (body: string) => JSON.parse(body) as Record<string, unknown>;

test("the first delivery runs the handler and answers 200; a retry of the job answers 200 without it", async (t) => {
  const { receiver, calls } = recording();
  const first = await receiver.handle(await request("ntf_1"));
  t.is(first.status, 200);
  t.deepEqual(json(first.body), { status: "processed", jobId: "ntf_1" });
  const retry = await receiver.handle(await request("ntf_1", { attempt: 1 }));
  t.is(retry.status, 200);
  t.deepEqual(json(retry.body), { status: "duplicate", jobId: "ntf_1" });
  t.is(calls.length, 1);
  t.is(calls[0]?.payload.OrderId, "ord_1");
});

test("a failing handler answers 500 and leaves the job unseen, so the service's retry processes it", async (t) => {
  let failures = 1;
  const { receiver, calls, errors } = recording({
    onNotification: () => {
      if (failures-- > 0) throw new Error("database down");
    },
  });
  const failed = await receiver.handle(await request("ntf_1"));
  t.is(failed.status, 500);
  t.deepEqual(json(failed.body), { error: "handler_failed", jobId: "ntf_1" }, "no details leak to the sender");
  t.is(errors[0]?.context.stage, "handler");
  t.is((errors[0]?.error as Error | undefined)?.message, "database down");
  t.is((await receiver.handle(await request("ntf_1", { attempt: 1 }))).status, 200);
  t.is((await receiver.handle(await request("ntf_1", { attempt: 2 }))).status, 200);
  t.deepEqual(
    calls.map((call) => call.attempt),
    [0, 1],
    "called again on the retry, not after it succeeded",
  );
});

test("a duplicate arriving while the first runs is refused with 409 and Retry-After", async (t) => {
  let finish: () => void = () => {};
  const running = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const { receiver, calls } = recording({ onNotification: () => running });
  const first = receiver.handle(await request("ntf_1"));
  const duplicate = await receiver.handle(await request("ntf_1", { attempt: 1 }));
  t.is(duplicate.status, 409);
  t.is(duplicate.headers["retry-after"], String(IN_PROGRESS_RETRY_AFTER_SECONDS));
  finish();
  t.is((await first).status, 200);
  t.is(calls.length, 1);
});

test("a refused request answers its error's 4xx and code, and never reaches the handler or the seen-store", async (t) => {
  const seen = new MemorySeenStore();
  const { receiver, calls, errors } = recording({ seen });
  const forged = await request("ntf_1", { signer: nextKey });
  const refused = await receiver.handle(forged);
  t.is(refused.status, 401);
  t.is(json(refused.body).error, "invalid_signature");
  t.true(errors[0]?.error instanceof InvalidSignatureError);
  t.is(errors[0]?.context.stage, "verify");
  t.is(calls.length, 0);
  t.is(seen.size, 0);
});

test("keys given as a function are read per request: a rotation without a restart", async (t) => {
  let keys = [key.publicKeyPem];
  const { receiver, calls } = recording({ keys: () => keys });
  t.is((await receiver.handle(await request("ntf_1", { signer: nextKey }))).status, 401);
  keys = [key.publicKeyPem, nextKey.publicKeyPem];
  t.is((await receiver.handle(await request("ntf_1", { signer: nextKey }))).status, 200);
  t.is((await receiver.handle(await request("ntf_2"))).status, 200);
  t.deepEqual(
    calls.map((call) => call.keyIndex),
    [1, 0],
  );
});

test("X-JobId is not signed: by default a body replayed under a forged job id runs again; deduplicateBy body stops it", async (t) => {
  const original = await request("ntf_1");
  const forged = { ...original, headers: { ...original.headers, "x-jobid": "ntf_forged" } };
  const byJob = recording();
  await byJob.receiver.handle(original);
  t.deepEqual(json((await byJob.receiver.handle(forged)).body), { status: "processed", jobId: "ntf_forged" });
  t.is(byJob.calls.length, 2);

  const byBody = recording({ deduplicateBy: "body" });
  await byBody.receiver.handle(original);
  t.deepEqual(json((await byBody.receiver.handle(forged)).body), { status: "duplicate", jobId: "ntf_forged" });
  t.is(byBody.calls.length, 1);
  t.is((await byBody.receiver.handle(await request("ntf_2", { orderId: "ord_2" }))).status, 200, "another body is another job");
});

test("a seen-store that fails to claim answers 503; one that fails to commit still answers 200", async (t) => {
  const memory = new MemorySeenStore();
  let failClaim = true;
  const flaky: SeenStore = {
    claim: (jobKey, leaseMs) => (failClaim ? Promise.reject(new Error("connection refused")) : memory.claim(jobKey, leaseMs)),
    commit: () => Promise.reject(new Error("connection reset")),
    release: (jobKey, token) => memory.release(jobKey, token),
  };
  const { receiver, calls, errors } = recording({ seen: flaky });
  const unavailable = await receiver.handle(await request("ntf_1"));
  t.is(unavailable.status, 503);
  t.is(calls.length, 0);
  failClaim = false;
  const processed = await receiver.handle(await request("ntf_1", { attempt: 1 }));
  t.is(processed.status, 200, "the handler ran: a retry would run it twice");
  t.is(calls.length, 1);
  t.deepEqual(
    errors.map((error) => error.context.stage),
    ["seen-store", "seen-store"],
  );
});

test("wiring mistakes fail at creation, or answer 500 without details", async (t) => {
  t.throws(() => createReceiver({ keys: [], onNotification: () => {} }), { instanceOf: TypeError });
  t.throws(() => createReceiver({ keys: ["not a key"], onNotification: () => {} }), { instanceOf: TypeError });
  t.throws(() => createReceiver({ keys: [key.publicKeyPem], onNotification: () => {}, tolerance: -1 }), { instanceOf: TypeError });
  const { receiver, errors } = recording();
  const parsed = { ...(await request("ntf_1")), body: "{}" as unknown as Uint8Array };
  const answer = await receiver.handle(parsed);
  t.is(answer.status, 500);
  t.deepEqual(json(answer.body), { error: "receiver_misconfigured" });
  t.true(errors[0]?.error instanceof TypeError);
});
