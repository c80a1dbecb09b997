import { randomBytes } from "node:crypto";
import test from "ava";
import { checkHeaders, MASK, maskHeaders, openHeaders, sealHeaders } from "../../src/domain/custom-headers.js";
import { ValidationError } from "../../src/domain/errors.js";
import { KeySealer } from "../../src/domain/key-sealing.js";
import type { JsonObject } from "../../src/domain/model.js";

function refusal(t: import("ava").ExecutionContext, headers: JsonObject, message: RegExp): void {
  const error = t.throws(() => checkHeaders(headers), { instanceOf: ValidationError });
  t.regex(error?.message ?? "", message);
  t.is((error as ValidationError).field, "headers");
}

test("names are HTTP tokens of at most 100 characters; values printable ASCII of at most 1024", (t) => {
  const fine = { "X-Api-Key": "k3y with spaces\tand a tab", "x_tenant.id~1": "", Authorization: "Bearer abc" };
  t.deepEqual(checkHeaders(fine), fine);
  t.deepEqual(checkHeaders({ [`X-${"a".repeat(98)}`]: "v".repeat(1024) }), { [`X-${"a".repeat(98)}`]: "v".repeat(1024) });
  refusal(t, { [`X-${"a".repeat(99)}`]: "v" }, /a header name is at most 100 characters/);
  refusal(t, { "X-Big": "v".repeat(1025) }, /^headers\."X-Big": the value is longer than 1024 characters$/);
  for (const name of ["", "X Space", "X:Colon", "Ünï", "X-(paren)", "X\r\nInjected"]) {
    refusal(t, { [name]: "v" }, /not a header name/);
  }
  for (const value of ["a\r\nX-Injected: 1", "a\nb", "nul\0", "bell\u0007", "del\u007f", "ünïcode"]) {
    refusal(t, { "X-Value": value }, /^headers\."X-Value": the value may hold printable ASCII characters only/);
  }
  refusal(t, { "X-Number": 5 }, /^headers\."X-Number": the value must be a string$/);
  refusal(t, { "X-Twice": "a", "x-twice": "b" }, /^headers\."x-twice": given twice \(header names are case-insensitive\)$/);
  refusal(t, Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, "v"])), /^headers: at most 20 headers, not 21$/);
});

test("headers the service sets itself are refused, whatever their case", (t) => {
  const reserved = [
    "Host",
    "content-length",
    "Content-Type",
    "X-SIGNATURE",
    "x-jobid",
    "X-JobAttempt",
    "webhook-id",
    "Webhook-Signature",
    "webhook-anything",
    "traceparent",
    "TraceState",
    "Connection",
    "keep-alive",
    "Proxy-Authorization",
    "TE",
    "Trailer",
    "Transfer-Encoding",
    "Upgrade",
  ];
  for (const name of reserved) {
    refusal(t, { [name]: "v" }, /the service sets this header itself; choose another name/);
  }
});

test("sealed as one document bound to the subscription; shown masked", (t) => {
  const sealer = new KeySealer(randomBytes(32));
  const headers = { "X-Api-Key": "secret-value-123", "X-Tenant": "acme" };
  const sealed = sealHeaders(sealer, headers, "sub_a") as string;
  t.false(sealed.includes("secret-value-123"));
  t.false(sealed.includes("X-Api-Key"), "even the names are sealed");
  t.deepEqual(openHeaders(sealer, { id: "sub_a", sealedHeaders: sealed }), headers);
  t.throws(
    () => openHeaders(sealer, { id: "sub_b", sealedHeaders: sealed }),
    undefined,
    "copied onto another subscription it does not open",
  );
  t.is(sealHeaders(sealer, {}, "sub_a"), undefined, "no headers: nothing stored");
  t.deepEqual(openHeaders(sealer, { id: "sub_a" }), {});
  t.deepEqual(maskHeaders(headers), { "X-Api-Key": MASK, "X-Tenant": MASK });
});
