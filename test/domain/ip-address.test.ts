import { isIP } from "node:net";
import test from "ava";
import ipaddr from "ipaddr.js";
import { embeddedIpv4, isPublicAddress, SPECIAL_IPV4, SPECIAL_IPV6 } from "../../src/domain/ip-address.js";

/** A small seeded generator (mulberry32): the same sample on every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const SAMPLE = 200_000;
const next = random(14);
const randomBits = (bits: number): bigint => {
  let value = 0n;
  for (let i = 0; i < bits; i += 16) value = (value << 16n) | BigInt(Math.floor(next() * 65_536));
  return value & ((1n << BigInt(bits)) - 1n);
};

function toBigInt(address: string): bigint {
  return ipaddr
    .parse(address)
    .toByteArray()
    .reduce((value, byte) => (value << 8n) | BigInt(byte), 0n);
}

/** The address as text: dotted quad, or eight uncompressed hex groups. */
function fromBigInt(value: bigint, bits: 32 | 128): string {
  const width = bits === 32 ? 8n : 16n;
  const parts: string[] = [];
  for (let shift = BigInt(bits) - width; shift >= 0n; shift -= width) {
    const part = Number((value >> shift) & ((1n << width) - 1n));
    parts.push(bits === 32 ? String(part) : part.toString(16));
  }
  return parts.join(bits === 32 ? "." : ":");
}

interface Block {
  network: string;
  prefix: number;
}

/** Both lists of special blocks: ours and ipaddr.js's. */
function blocks(kind: "ipv4" | "ipv6"): Block[] {
  // ipaddr.js keeps its table on the prototype, untyped.
  const theirs = ((kind === "ipv4" ? ipaddr.IPv4 : ipaddr.IPv6).prototype as unknown as { SpecialRanges: Record<string, unknown> })
    .SpecialRanges;
  const listed = Object.values(theirs).flatMap((entry) => {
    const pairs = (Array.isArray((entry as unknown[])[0]) ? entry : [entry]) as Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
    return pairs.map(([network, prefix]) => ({ network: network.toString(), prefix }));
  });
  return [...(kind === "ipv4" ? SPECIAL_IPV4 : SPECIAL_IPV6), ...listed];
}

/** Every block's first and last address and their neighbours outside it. */
function boundaries(kind: "ipv4" | "ipv6"): string[] {
  const bits = kind === "ipv4" ? 32 : 128;
  const top = (1n << BigInt(bits)) - 1n;
  return blocks(kind).flatMap(({ network, prefix }) => {
    const first = toBigInt(network);
    const last = first | ((1n << BigInt(bits - prefix)) - 1n);
    return [first - 1n, first, last, last + 1n].filter((value) => value >= 0n && value <= top).map((value) => fromBigInt(value, bits));
  });
}

/** Random addresses: anywhere, and inside a random special block (ours or ipaddr.js's) with random host bits. */
function sample(kind: "ipv4" | "ipv6"): string[] {
  const bits = kind === "ipv4" ? 32 : 128;
  const special = blocks(kind);
  const addresses: string[] = [];
  for (let i = 0; i < SAMPLE; i++) {
    if (i % 2 === 0) {
      addresses.push(fromBigInt(randomBits(bits), bits));
      continue;
    }
    const block = special[Math.floor(next() * special.length)] as Block;
    const hostBits = BigInt(bits - block.prefix);
    addresses.push(fromBigInt(toBigInt(block.network) | (randomBits(bits) & ((1n << hostBits) - 1n)), bits));
  }
  return addresses;
}

/** ipaddr.js's verdict; an IPv6 form embedding an IPv4 address is judged, as ours is, by that address. */
function ipaddrSaysPublic(address: string): boolean {
  const v4 = isIP(address) === 4 ? undefined : embeddedIpv4(address);
  return ipaddr.parse(v4 ?? address).range() === "unicast";
}

test("IPv4: refused exactly where ipaddr.js says anything but unicast (random sample and every boundary)", (t) => {
  const disagreements = [...boundaries("ipv4"), ...sample("ipv4")].filter(
    (address) => isPublicAddress(address) !== ipaddrSaysPublic(address),
  );
  t.deepEqual(disagreements.slice(0, 20), []);
});

test("IPv6: whatever ipaddr.js calls anything but unicast is refused (random sample and every boundary)", (t) => {
  const addresses = [...boundaries("ipv6"), ...sample("ipv6")];
  const missed = addresses.filter((address) => isPublicAddress(address) && !ipaddrSaysPublic(address));
  t.deepEqual(missed.slice(0, 20), []);
  // Inside 2000::/3 (global unicast) the two agree both ways; outside it ours refuses everything ipaddr.js does not decode.
  const global = addresses.filter((address) => embeddedIpv4(address) === undefined && toBigInt(address) >> 125n === 1n);
  t.true(global.length > 10_000);
  t.deepEqual(global.filter((address) => isPublicAddress(address) !== ipaddrSaysPublic(address)).slice(0, 20), []);
  const outside = addresses.filter((address) => embeddedIpv4(address) === undefined && toBigInt(address) >> 125n !== 1n);
  t.deepEqual(outside.filter((address) => isPublicAddress(address)).slice(0, 20), []);
});

for (const address of [
  "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo
  "2001:2::1", // benchmarking
  "2001:10::1", // ORCHID
  "2001:20::1", // ORCHIDv2
  "2001:30::1", // drone remote ID
  "2001:db8::1",
  "3fff::1", // documentation (RFC 9637)
  "5f00::1", // SRv6 SIDs
  "100::1", // discard-only
  "100:0:0:1::1", // dummy prefix
  "64:ff9b:1::a00:1", // local-use NAT64
  "4000::1", // outside 2000::/3
  "192.88.99.1",
  "192.88.99.2",
  "192.0.0.9",
  "192.31.196.1",
  "192.52.193.1",
  "192.175.48.1",
]) {
  test(`refused: ${address}`, (t) => {
    t.false(isPublicAddress(address));
  });
}

test("ordinary public addresses pass, in every spelling that embeds them", (t) => {
  for (const address of ["8.8.8.8", "2606:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"]) {
    t.true(isPublicAddress(address), address);
  }
});
