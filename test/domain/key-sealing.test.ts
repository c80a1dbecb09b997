import test from "ava";
import { KeySealer, parseMasterKey } from "../../src/domain/key-sealing.js";
import { generateSigningKeyPair } from "../../src/domain/signature.js";

const sealer = new KeySealer(Buffer.alloc(32, 1));

test("a sealed key opens only with the same master key and subscription id", async (t) => {
  const { privateKeyPem } = await generateSigningKeyPair(2048);
  const sealed = sealer.seal(privateKeyPem, "sub_a");
  t.regex(sealed, /^sealed:v1:[A-Za-z0-9+/]+=*$/);
  t.false(sealed.includes("PRIVATE KEY"), "nothing readable at rest");
  t.not(sealer.seal(privateKeyPem, "sub_a"), sealed, "a fresh IV every time");
  t.is(sealer.open(sealed, "sub_a"), privateKeyPem);
  t.throws(() => sealer.open(sealed, "sub_b"), undefined, "moved to another row");
  t.throws(() => new KeySealer(Buffer.alloc(32, 2)).open(sealed, "sub_a"), undefined, "another master key");
  const tampered = `${sealed.slice(0, -6)}AAAA==`;
  t.throws(() => sealer.open(tampered, "sub_a"));
  t.throws(() => sealer.open(privateKeyPem, "sub_a"), { message: /not sealed/ });
});

test("master keys are 32 bytes, hex or base64", (t) => {
  t.is(parseMasterKey("ab".repeat(32))?.length, 32);
  t.is(parseMasterKey(Buffer.alloc(32, 9).toString("base64"))?.length, 32);
  t.is(parseMasterKey("short"), undefined);
  t.throws(() => new KeySealer(Buffer.alloc(16)), { message: /32 bytes/ });
});
