import test from "ava";
import { secretMatcher } from "../../src/domain/clients.js";

test("a secret matches only itself, whatever its length or where it differs", (t) => {
  const isToken = secretMatcher("admin-token-0123456789abcdef");
  t.true(isToken("admin-token-0123456789abcdef"));
  t.false(isToken("admin-token-0123456789abcdeF"), "the last character");
  t.false(isToken("Admin-token-0123456789abcdef"), "the first");
  t.false(isToken("admin-token"), "a prefix");
  t.false(isToken("admin-token-0123456789abcdef-and-more"), "longer");
  t.false(isToken(""));
  t.is(secretMatcher("same")("same"), true);
  t.is(secretMatcher("same")("other"), false);
});
