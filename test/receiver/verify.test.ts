import test from "ava";
import {
  DEFAULT_TOLERANCE_MS,
  InvalidSignatureError,
  isCatalogEvent,
  MAX_CLOCK_SKEW_MS,
  MalformedBodyError,
  MalformedHeaderError,
  MissingHeaderError,
  StaleTimestampError,
  type VerifyOptions,
  verifyNotification,
  WebhookVerificationError,
} from "../../packages/receiver/src/index.js";
import { buildNotificationBody } from "../../src/domain/notification-body.js";
import { generateSigningKeyPair, type SigningKeyPair, signBody } from "../../src/domain/signature.js";

// The service's own signing code signs here, so these tests check the SDK against what the service sends.
let current: SigningKeyPair;
let next: SigningKeyPair;
test.before(async () => {
  [current, next] = await Promise.all([generateSigningKeyPair(2048), generateSigningKeyPair(2048)]);
});

const ACCEPTED = new Date("2026-11-21T22:52:13.940Z");
const JOB_ID = "ntf_5653be6258d34722857605be2a85a7cc";

async function delivery(options: { body?: string; key?: SigningKeyPair; attempt?: string; at?: Date } = {}): Promise<VerifyOptions> {
  const body =
    options.body ?? buildNotificationBody("Order.Shipped", { OrderId: "ord_1", Carrier: "DHL", TrackingNumber: "JD01" }, ACCEPTED);
  const signature = await signBody(body, (options.key ?? current).privateKeyPem);
  return {
    body: Buffer.from(body),
    headers: { "x-signature": signature, "x-jobid": JOB_ID, "x-jobattempt": options.attempt ?? "0" },
    keys: [current.publicKeyPem],
    now: () => (options.at ?? ACCEPTED).getTime() + 1_000,
  };
}

function refusal<T extends WebhookVerificationError>(
  t: import("ava").ExecutionContext,
  options: VerifyOptions,
  type: abstract new (...args: never[]) => T,
  status: number,
  code: string,
): T {
  const error = t.throws(() => verifyNotification(options)) as T;
  t.true(error instanceof type, `${error?.name}: ${error?.message}`);
  t.true(error instanceof WebhookVerificationError);
  t.is(error.status, status);
  t.is(error.code, code);
  return error;
}

test("a signed delivery verifies: event, timestamp, job headers, payload without the base fields", async (t) => {
  const verified = verifyNotification(await delivery({ attempt: "3" }));
  t.deepEqual(verified, {
    event: "Order.Shipped",
    timestamp: ACCEPTED,
    jobId: JOB_ID,
    attempt: 3,
    payload: { OrderId: "ord_1", Carrier: "DHL", TrackingNumber: "JD01" },
    keyIndex: 0,
  });
  if (isCatalogEvent(verified, "Order.Shipped")) t.is(verified.payload.Carrier, "DHL");
  else t.fail("Order.Shipped is a catalog event");
  t.false(isCatalogEvent({ ...verified, event: "Ticket.Opened" }));
});

test("headers are found in any case, as a plain record or a fetch Headers", async (t) => {
  const options = await delivery();
  const record = options.headers as Record<string, string>;
  const mixed = Object.fromEntries(Object.entries(record).map(([name, value]) => [name.replace("x-", "X-"), value]));
  t.is(verifyNotification({ ...options, headers: mixed }).jobId, JOB_ID);
  t.is(verifyNotification({ ...options, headers: new Headers(record) }).jobId, JOB_ID);
});

test("during a rotation either key verifies, and keyIndex tells which", async (t) => {
  const keys = [current.publicKeyPem, next.publicKeyPem];
  t.is(verifyNotification({ ...(await delivery()), keys }).keyIndex, 0);
  t.is(verifyNotification({ ...(await delivery({ key: next })), keys }).keyIndex, 1);
  refusal(t, await delivery({ key: next }), InvalidSignatureError, 401, "invalid_signature");
});

test("a changed byte, a re-serialised body or a wrong key is an InvalidSignatureError", async (t) => {
  const options = await delivery();
  const text = options.body.toString();
  refusal(t, { ...options, body: Buffer.from(text.replace("DHL", "UPS")) }, InvalidSignatureError, 401, "invalid_signature");
  refusal(t, { ...options, body: Buffer.from(JSON.stringify(JSON.parse(text), null, 1)) }, InvalidSignatureError, 401, "invalid_signature");
  refusal(t, { ...options, keys: [next.publicKeyPem] }, InvalidSignatureError, 401, "invalid_signature");
  refusal(
    t,
    { ...options, headers: { ...options.headers, "x-signature": "not base64!" } },
    InvalidSignatureError,
    401,
    "invalid_signature",
  );
});

test("a missing or malformed header is refused before any signature work", async (t) => {
  const options = await delivery();
  const headers = options.headers as Record<string, string>;
  for (const name of ["x-signature", "x-jobid", "x-jobattempt"]) {
    const { [name]: _dropped, ...rest } = headers;
    const error = refusal(t, { ...options, headers: rest }, MissingHeaderError, 400, "missing_header");
    t.is(error.header.toLowerCase(), name);
  }
  refusal(t, { ...options, headers: { ...headers, "x-jobid": "" } }, MissingHeaderError, 400, "missing_header");
  for (const attempt of ["6", "-1", "1.5", "one", "01"]) {
    refusal(t, { ...options, headers: { ...headers, "x-jobattempt": attempt } }, MalformedHeaderError, 400, "malformed_header");
  }
  refusal(t, { ...options, headers: { ...headers, "x-jobid": [JOB_ID, "ntf_other"] } }, MalformedHeaderError, 400, "malformed_header");
});

test("a signed body that is not a notification is a MalformedBodyError", async (t) => {
  for (const body of ["[1]", "not json", '{"Event":"Order.Shipped"}', '{"Event":"nodot","Timestamp":"2026-11-21T22:52:13.940Z"}']) {
    refusal(t, await delivery({ body }), MalformedBodyError, 400, "malformed_body");
  }
  const secondsOnly = '{"Event":"Order.Shipped","Timestamp":"2026-11-21T22:52:13Z"}';
  refusal(t, await delivery({ body: secondsOnly }), MalformedBodyError, 400, "malformed_body");
});

test("one tolerance for every attempt: 30 hours by default, a few minutes of clock skew ahead", async (t) => {
  const at = (ms: number) => () => ACCEPTED.getTime() + ms;
  for (const attempt of ["0", "5"]) {
    const options = await delivery({ attempt });
    t.is(verifyNotification({ ...options, now: at(DEFAULT_TOLERANCE_MS) }).attempt, Number(attempt));
    const stale = refusal(t, { ...options, now: at(DEFAULT_TOLERANCE_MS + 1) }, StaleTimestampError, 400, "stale_timestamp");
    t.is(stale.ageMs, DEFAULT_TOLERANCE_MS + 1);
    t.deepEqual(stale.timestamp, ACCEPTED);
  }
  const options = await delivery();
  t.is(DEFAULT_TOLERANCE_MS, 30 * 3_600_000);
  t.truthy(verifyNotification({ ...options, now: at(-MAX_CLOCK_SKEW_MS) }));
  refusal(t, { ...options, now: at(-MAX_CLOCK_SKEW_MS - 1) }, StaleTimestampError, 400, "stale_timestamp");
  refusal(t, { ...options, now: at(61_000), tolerance: 60_000 }, StaleTimestampError, 400, "stale_timestamp");
  t.truthy(verifyNotification({ ...options, now: at(400 * 24 * 3_600_000), tolerance: false }), "false accepts any age");
});

test("wiring mistakes are TypeErrors, not refusals: a parsed body, no keys, a key that is no PEM", async (t) => {
  const options = await delivery();
  const parsed = JSON.parse(options.body.toString()) as unknown;
  t.throws(() => verifyNotification({ ...options, body: parsed as Uint8Array }), { instanceOf: TypeError, message: /raw request bytes/ });
  t.throws(() => verifyNotification({ ...options, keys: ["-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n"] }), {
    instanceOf: TypeError,
  });
  t.throws(() => verifyNotification({ ...options, keys: [] }), { instanceOf: TypeError });
});
