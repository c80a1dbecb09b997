import test from "ava";
import { DEFAULT_CATALOG } from "../../src/domain/default-catalog.js";
import { assertDefinition, parseCatalog } from "../../src/domain/event-catalog.js";
import type { JsonObject } from "../../src/domain/model.js";
import { buildNotificationBody, formatTimestamp } from "../../src/domain/notification-body.js";
import { assertPayloadMatches } from "../../src/domain/payload-schema.js";
import { generateSigningKeyPair, signBody, verifyBody } from "../../src/domain/signature.js";

test("Timestamp is ISO 8601 UTC with exactly three fraction digits", (t) => {
  t.is(formatTimestamp(new Date(Date.UTC(2026, 10, 21, 9, 5, 7, 40))), "2026-11-21T09:05:07.040Z");
  t.is(formatTimestamp(new Date(Date.UTC(2026, 0, 1))), "2026-01-01T00:00:00.000Z");
});

test("the body starts with Event and Timestamp, then the event's fields", (t) => {
  const body = buildNotificationBody("Order.Created", { OrderId: "o1", Total: 3.5 }, new Date(Date.UTC(2026, 0, 1)));
  t.is(body, '{"Event":"Order.Created","Timestamp":"2026-01-01T00:00:00.000Z","OrderId":"o1","Total":3.5}');
});

test("a payload may not set the base fields", (t) => {
  t.throws(() => buildNotificationBody("Order.Created", { Event: "Other.Thing" }, new Date()), { message: /may not set Event/ });
  t.throws(() => buildNotificationBody("Order.Created", { Timestamp: "yesterday" }, new Date()), { message: /may not set Timestamp/ });
});

test("signatures are RSA SHA-256 over the exact bytes, Base64", async (t) => {
  const keys = await generateSigningKeyPair(2048);
  t.regex(keys.publicKeyPem, /^-----BEGIN PUBLIC KEY-----/);
  const body = buildNotificationBody("Order.Created", { Name: "Zoë" }, new Date());
  const signature = await signBody(body, keys.privateKeyPem);
  t.is(Buffer.from(signature, "base64").length, 256);
  t.true(verifyBody(body, signature, keys.publicKeyPem));
  t.true(verifyBody(Buffer.from(body, "utf8"), signature, keys.publicKeyPem));
  t.false(verifyBody(body.replace("Zoë", "Zoe"), signature, keys.publicKeyPem));
  const other = await generateSigningKeyPair(2048);
  t.false(verifyBody(body, signature, other.publicKeyPem));
});

test("the default catalog is valid and every sample builds a body", (t) => {
  t.true(DEFAULT_CATALOG.length >= 5);
  for (const type of DEFAULT_CATALOG) {
    t.notThrows(() => assertDefinition(type));
    t.truthy(type.description);
    t.notThrows(() => buildNotificationBody(type.name, type.samplePayload, new Date()));
    if (type.jsonSchema) t.notThrows(() => assertPayloadMatches(type.name, type.jsonSchema as JsonObject, type.samplePayload));
  }
});

test("a catalog file is checked entry by entry", (t) => {
  t.deepEqual(parseCatalog([{ name: "Ticket.Opened" }]), [{ name: "Ticket.Opened", description: "", samplePayload: {} }]);
  t.throws(() => parseCatalog({}), { message: /JSON array/ });
  t.throws(() => parseCatalog([{ description: "x" }]), { message: /no string "name"/ });
  t.throws(() => parseCatalog([{ name: "bad name" }]), { message: /<Entity>\.<Event>/ });
  t.throws(() => parseCatalog([{ name: "A.B", samplePayload: { Event: 1 } }]), { message: /base field Event/ });
  t.throws(() => parseCatalog([{ name: "A.B" }, { name: "A.B" }]), { message: /twice/ });
  t.throws(() => parseCatalog([{ name: "A.B", jsonSchema: { type: "no-such-type" } }]), { message: /not a valid JSON Schema/ });
});

test("a payload is checked against its event's JSON Schema with a readable error", (t) => {
  const schema = { type: "object", required: ["OrderId"], properties: { OrderId: { type: "string" }, Total: { type: "number" } } };
  t.notThrows(() => assertPayloadMatches("Order.Created", schema, { OrderId: "o1", Total: 2 }));
  t.throws(() => assertPayloadMatches("Order.Created", schema, { Total: "two" }), {
    message:
      /does not match the schema of Order\.Created: .*OrderId.*\/Total must be number|does not match the schema of Order\.Created: .*Total.*OrderId/,
  });
});

test("a schema with $id compiles again from a fresh copy (catalog refreshes)", (t) => {
  const schema = () => ({ $id: "https://example.com/schemas/ticket", type: "object", required: ["TicketId"] });
  t.notThrows(() => assertPayloadMatches("Ticket.Opened", schema(), { TicketId: "t" }));
  t.notThrows(() => assertPayloadMatches("Ticket.Opened", schema(), { TicketId: "t" }));
  t.throws(() => assertPayloadMatches("Ticket.Opened", schema(), {}), { message: /TicketId/ });
});
