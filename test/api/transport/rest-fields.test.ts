import test from "ava";
import { HttpError } from "../../../src/api/transport/http-body.js";
import { bodyFields, queryFields } from "../../../src/api/transport/rest-fields.js";
import { ListNotificationsRequestSchema } from "../../../src/gen/webhooks/v1/delivery_service_pb.js";
import { CreateSubscriptionRequestSchema } from "../../../src/gen/webhooks/v1/subscription_service_pb.js";

test("a body's enum field takes the short name in any case, the full name or the number; other fields pass as they are", (t) => {
  const body = (signatureScheme: unknown) => bodyFields(CreateSubscriptionRequestSchema, { event: "Order.Created", signatureScheme });
  for (const name of ["STANDARD_WEBHOOKS", "standard_webhooks", "SIGNATURE_SCHEME_STANDARD_WEBHOOKS", "2"]) {
    t.deepEqual(body(name), { event: "Order.Created", signatureScheme: name === "2" ? 2 : "SIGNATURE_SCHEME_STANDARD_WEBHOOKS" }, name);
  }
  t.deepEqual(body(2), { event: "Order.Created", signatureScheme: 2 }, "a JSON number is the decoder's to judge");
  t.deepEqual(bodyFields(CreateSubscriptionRequestSchema, { signature_scheme: "rsa_sha256" }), {
    signature_scheme: "SIGNATURE_SCHEME_RSA_SHA256",
  });
});

test("an enum name that is none is a 400 listing the names", (t) => {
  const error = t.throws(() => bodyFields(CreateSubscriptionRequestSchema, { signatureScheme: "HMAC" }), { instanceOf: HttpError });
  t.like(error, { status: 400, code: "invalid_argument" });
  t.regex(error?.message ?? "", /^signatureScheme must be one of UNSPECIFIED, RSA_SHA256, STANDARD_WEBHOOKS, STANDARD_WEBHOOKS_ED25519 /);
  t.throws(() => bodyFields(CreateSubscriptionRequestSchema, { signatureScheme: "9" }), { instanceOf: HttpError }, "a number no value has");
});

test("query parameters map enum names the same way", (t) => {
  t.deepEqual(queryFields(ListNotificationsRequestSchema, new URLSearchParams("status=failed&pageSize=10")), {
    status: "NOTIFICATION_STATUS_FAILED",
    pageSize: "10",
  });
});
