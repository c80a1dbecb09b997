import test from "ava";
import { ValidationError } from "../../src/domain/errors.js";
import type { JsonObject } from "../../src/domain/model.js";
import { checkFilter, MAX_FILTER_BYTES, matchesFilter } from "../../src/domain/payload-filter.js";

const order: JsonObject = {
  OrderId: "ord_1",
  TotalAmount: 120,
  Currency: "EUR",
  PlacedAt: "2026-03-01T10:00:00.000Z",
  Customer: { Id: "cus_7", Country: "CH", Tags: ["vip", "b2b"] },
  Coupon: null,
};

const matches = (filter: JsonObject, payload: JsonObject = order) => matchesFilter(checkFilter(filter), payload);

test("a field equal to a value, all fields together; the empty filter matches everything", (t) => {
  t.true(matches({}));
  t.true(matches({ Currency: "EUR" }));
  t.true(matches({ Currency: "EUR", TotalAmount: 120 }));
  t.false(matches({ Currency: "EUR", TotalAmount: 121 }), "every field must hold");
  t.false(matches({ Currency: "eur" }), "strings compare exactly");
  t.false(matches({ TotalAmount: "120" }), "no conversion between types");
  t.true(matches({ Coupon: null }), "null equals a null field");
  t.false(matches({ Missing: null }), "null does not equal a missing field");
  t.true(matches({ "Customer.Tags": ["vip", "b2b"] }), "lists compare whole");
  t.false(matches({ "Customer.Tags": ["vip"] }));
});

test("nested objects match by path or by nesting, as a subset", (t) => {
  t.true(matches({ "Customer.Country": "CH" }));
  t.true(matches({ Customer: { Country: "CH" } }), "nesting is a subset match: other fields may be there");
  t.false(matches({ Customer: { Country: "DE" } }));
  t.false(matches({ "Customer.Country.Code": "CH" }), "a path through a non-object finds nothing");
  t.false(matches({ OrderId: { Id: "ord_1" } }), "a nested filter needs an object");
  t.true(matches({ Customer: { Country: { $in: ["CH", "LI"] } } }), "operators inside nesting");
});

test("$in and $nin: one of / none of; a missing field is in none", (t) => {
  t.true(matches({ Currency: { $in: ["EUR", "CHF"] } }));
  t.false(matches({ Currency: { $in: ["USD"] } }));
  t.false(matches({ Missing: { $in: ["x", null] } }));
  t.true(matches({ Currency: { $nin: ["USD", "GBP"] } }));
  t.false(matches({ Currency: { $nin: ["EUR"] } }));
  t.true(matches({ Missing: { $nin: ["x"] } }));
  t.true(matches({ "Customer.Tags": { $in: [["vip", "b2b"]] } }), "members compare whole");
});

test("$gt, $gte, $lt, $lte compare numbers with numbers and strings with strings", (t) => {
  t.true(matches({ TotalAmount: { $gte: 120 } }));
  t.false(matches({ TotalAmount: { $gt: 120 } }));
  t.true(matches({ TotalAmount: { $gt: 100, $lt: 200 } }), "operators on one field all hold");
  t.false(matches({ TotalAmount: { $gt: 100, $lt: 110 } }));
  t.true(matches({ TotalAmount: { $lte: 120.0 } }));
  t.true(matches({ PlacedAt: { $gte: "2026-03-01T00:00:00.000Z", $lt: "2026-03-02" } }), "ISO timestamps order as strings");
  t.false(matches({ TotalAmount: { $gte: "100" } }), "a number never compares with a string");
  t.false(matches({ Missing: { $lt: 5 } }));
  t.false(matches({ Coupon: { $lt: 5 } }), "null is not a number");
});

test("$exists, $or, $and", (t) => {
  t.true(matches({ Coupon: { $exists: true } }), "a null field exists");
  t.true(matches({ Missing: { $exists: false } }));
  t.false(matches({ OrderId: { $exists: false } }));
  t.true(matches({ $or: [{ Currency: "USD" }, { TotalAmount: { $gte: 100 } }] }));
  t.false(matches({ $or: [{ Currency: "USD" }, { TotalAmount: { $gte: 1000 } }] }));
  t.true(matches({ $and: [{ Currency: "EUR" }, { "Customer.Country": "CH" }] }));
  t.false(matches({ $and: [{ Currency: "EUR" }, { "Customer.Country": "DE" }] }));
  t.true(matches({ Customer: { $or: [{ Country: "DE" }, { Id: "cus_7" }] } }), "$or inside a nested object");
  t.true(matches({ Currency: "EUR", $or: [{ Currency: "USD" }, { Currency: "EUR" }] }));
});

test("a field named like a prototype member is only ever the payload's own", (t) => {
  t.false(matches({ constructor: { $exists: true } }));
  t.false(matches({ "Customer.toString": { $exists: true } }));
});

function refusal(t: import("ava").ExecutionContext, filter: JsonObject, message: RegExp): void {
  const error = t.throws(() => checkFilter(filter), { instanceOf: ValidationError });
  t.regex(error?.message ?? "", message);
  t.is((error as ValidationError).field, "filter");
}

test("a bad filter is refused when saved, saying where and what", (t) => {
  refusal(t, { TotalAmount: { $foo: 1 } }, /^filter\.TotalAmount: unknown operator \$foo$/);
  refusal(t, { TotalAmount: { $gte: 1, $foo: 1 } }, /^filter\.TotalAmount: unknown operator \$foo$/);
  refusal(t, { $where: "1" }, /^filter: unknown operator \$where$/);
  refusal(t, { $or: [{ A: 1 }, { B: { $regex: "x" } }] }, /^filter\.\$or\[1\]\.B: unknown operator \$regex$/);
  refusal(t, { $or: [] }, /^filter\.\$or: a non-empty list of filters$/);
  refusal(t, { $and: { A: 1 } }, /^filter\.\$and: a non-empty list of filters$/);
  refusal(t, { $or: [1] }, /^filter\.\$or\[0\]: a filter object$/);
  refusal(t, { $in: ["EUR"] }, /^filter: \$in applies to a field/);
  refusal(t, { Currency: { $in: "EUR" } }, /^filter\.Currency\.\$in: a list of values$/);
  refusal(t, { Currency: { $exists: 1 } }, /^filter\.Currency\.\$exists: true or false$/);
  refusal(t, { TotalAmount: { $gt: [1] } }, /^filter\.TotalAmount\.\$gt: a number or a string$/);
  refusal(t, { TotalAmount: { $gt: 1, Other: 2 } }, /^filter\.TotalAmount: mixes operators with the field Other$/);
  refusal(t, { TotalAmount: { $gt: 1, $or: [{ A: 1 }] } }, /^filter\.TotalAmount: \$or combines filters/);
  refusal(t, { "Customer..Country": 1 }, /^filter\.Customer\.\.Country: an empty field name$/);
});

test("a filter is at most 4096 bytes of JSON and 8 levels deep", (t) => {
  const big = { Currency: { $in: Array.from({ length: 600 }, (_, i) => `C${i}`) } };
  refusal(t, big, new RegExp(`^filter: at most ${MAX_FILTER_BYTES} bytes of JSON, not \\d+$`));
  let deep: JsonObject = { A: 1 };
  for (let i = 0; i < 8; i++) deep = { A: deep };
  refusal(t, deep, /^filter: nested more than 8 deep$/);
  t.notThrows(() => checkFilter({ A: { B: { C: { D: { E: { F: { $in: [1] } } } } } } }), "objects and lists, 8 levels");
});
