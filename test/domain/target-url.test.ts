import test from "ava";
import { ForbiddenTargetError, ValidationError } from "../../src/domain/errors.js";
import { embeddedIpv4, isPublicAddress } from "../../src/domain/ip-address.js";
import { normaliseTargetUrl } from "../../src/domain/target-url.js";

const strict = { allowPrivateTargets: false, allowHttpTargets: false };

test("public https URLs pass, without their fragment", (t) => {
  t.is(normaliseTargetUrl("https://hooks.example.com/in?x=1#frag", strict), "https://hooks.example.com/in?x=1");
  t.is(normaliseTargetUrl("https://93.184.215.14/hook", strict), "https://93.184.215.14/hook");
  t.is(normaliseTargetUrl("https://[2606:4700::1111]/hook", strict), "https://[2606:4700::1111]/hook");
});

const refused: Array<[string, string]> = [
  ["http://hooks.example.com/", "plain http"],
  ["ftp://example.com/", "scheme"],
  ["https://user:pw@example.com/", "credentials"],
  ["https://localhost/", "localhost"],
  ["https://kubernetes/", "single label"],
  ["https://printer.local/", ".local"],
  ["https://127.0.0.1/", "loopback"],
  ["https://2130706433/", "decimal loopback"],
  ["https://0x7f000001/", "hex loopback"],
  ["https://0177.0.0.1/", "octal loopback"],
  ["https://0.0.0.0/", "unspecified"],
  ["https://10.1.2.3/", "10/8"],
  ["https://172.16.0.1/", "172.16/12"],
  ["https://172.31.255.255/", "172.16/12 end"],
  ["https://192.168.1.1/", "192.168/16"],
  ["https://100.64.0.1/", "CGNAT"],
  ["https://169.254.169.254/latest/meta-data", "cloud metadata"],
  ["https://198.18.0.1/", "benchmarking"],
  ["https://192.0.0.8/", "192.0.0/24"],
  ["https://240.0.0.1/", "240/4"],
  ["https://255.255.255.255/", "broadcast"],
  ["https://224.0.0.1/", "multicast"],
  ["https://[::1]/", "IPv6 loopback"],
  ["https://[::]/", "IPv6 unspecified"],
  ["https://[fc00::1]/", "unique local"],
  ["https://[fd12:3456::1]/", "unique local fd"],
  ["https://[fe80::1]/", "link-local"],
  ["https://[fec0::1]/", "site-local"],
  ["https://[::ffff:127.0.0.1]/", "IPv4-mapped loopback"],
  ["https://[::ffff:169.254.169.254]/", "IPv4-mapped metadata"],
  ["https://[64:ff9b::10.0.0.1]/", "NAT64 private"],
  ["https://[2002:0a00:0001::]/", "6to4 private"],
  ["https://[::10.0.0.1]/", "IPv4-compatible"],
];

for (const [url, why] of refused) {
  test(`refused: ${why} (${url})`, (t) => {
    t.throws(() => normaliseTargetUrl(url, strict), { instanceOf: ForbiddenTargetError });
  });
}

test("another scheme's refusal names the schemes this service allows", (t) => {
  t.throws(() => normaliseTargetUrl("ftp://example.com/", strict), { message: "url must use https:// (got ftp)" });
  const withHttp = { allowPrivateTargets: false, allowHttpTargets: true };
  t.throws(() => normaliseTargetUrl("ftp://example.com/", withHttp), { message: "url must use https:// or http:// (got ftp)" });
});

test("non-URLs and overlong URLs are validation errors", (t) => {
  t.throws(() => normaliseTargetUrl("", strict), { instanceOf: ValidationError, message: /required/ });
  t.throws(() => normaliseTargetUrl("hooks.example.com/in", strict), { instanceOf: ValidationError, message: /absolute URL/ });
  t.throws(() => normaliseTargetUrl(`https://example.com/${"a".repeat(2048)}`, strict), { message: /2048/ });
});

test("ALLOW_PRIVATE_TARGETS and ALLOW_HTTP_TARGETS open loopback http for dev", (t) => {
  t.is(
    normaliseTargetUrl("http://127.0.0.1:9000/hook", { allowPrivateTargets: true, allowHttpTargets: true }),
    "http://127.0.0.1:9000/hook",
  );
});

test("embedded IPv4 addresses decide for IPv6 forms", (t) => {
  t.is(embeddedIpv4("::ffff:8.8.8.8"), "8.8.8.8");
  t.is(embeddedIpv4("64:ff9b::808:808"), "8.8.8.8");
  t.is(embeddedIpv4("2002:808:808::1"), "8.8.8.8");
  t.is(embeddedIpv4("2606:4700::1111"), undefined);
  t.true(isPublicAddress("::ffff:8.8.8.8"));
  t.true(isPublicAddress("8.8.8.8"));
  t.false(isPublicAddress("not-an-ip"));
});
