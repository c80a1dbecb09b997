import { BlockList, isIP } from "node:net";

/**
 * One entry of IANA's special-purpose address registries ("IPv4
 * Special-Purpose Address Registry", "IPv6 Special-Purpose Address
 * Registry"), with its "Globally Reachable" column: true, false, or "n/a"
 * (the registry's N/A, for deprecated or translation-only blocks).
 */
interface SpecialRange {
  network: string;
  prefix: number;
  name: string;
  globallyReachable: boolean | "n/a";
}

/**
 * Every entry of the IPv4 registry, plus multicast (its own registry). All
 * are refused, the globally reachable ones too: anycast relays, AS112 sinks
 * and AMT gateways are infrastructure, never somebody's webhook receiver.
 */
export const SPECIAL_IPV4: readonly SpecialRange[] = [
  { network: "0.0.0.0", prefix: 8, name: '"this network" (RFC 791)', globallyReachable: false },
  { network: "0.0.0.0", prefix: 32, name: '"this host on this network" (RFC 1122)', globallyReachable: false },
  { network: "10.0.0.0", prefix: 8, name: "private use (RFC 1918)", globallyReachable: false },
  { network: "100.64.0.0", prefix: 10, name: "shared address space, CGNAT (RFC 6598)", globallyReachable: false },
  { network: "127.0.0.0", prefix: 8, name: "loopback (RFC 1122)", globallyReachable: false },
  { network: "169.254.0.0", prefix: 16, name: "link-local, cloud metadata (RFC 3927)", globallyReachable: false },
  { network: "172.16.0.0", prefix: 12, name: "private use (RFC 1918)", globallyReachable: false },
  { network: "192.0.0.0", prefix: 24, name: "IETF protocol assignments (RFC 6890)", globallyReachable: false },
  { network: "192.0.0.0", prefix: 29, name: "IPv4 service continuity prefix (RFC 7335)", globallyReachable: false },
  { network: "192.0.0.8", prefix: 32, name: "IPv4 dummy address (RFC 7600)", globallyReachable: false },
  { network: "192.0.0.9", prefix: 32, name: "Port Control Protocol anycast (RFC 7723)", globallyReachable: true },
  { network: "192.0.0.10", prefix: 32, name: "TURN anycast (RFC 8155)", globallyReachable: true },
  { network: "192.0.0.170", prefix: 31, name: "NAT64/DNS64 discovery (RFC 8880)", globallyReachable: false },
  { network: "192.0.2.0", prefix: 24, name: "documentation, TEST-NET-1 (RFC 5737)", globallyReachable: false },
  { network: "192.31.196.0", prefix: 24, name: "AS112-v4 (RFC 7535)", globallyReachable: true },
  { network: "192.52.193.0", prefix: 24, name: "AMT (RFC 7450)", globallyReachable: true },
  { network: "192.88.99.0", prefix: 24, name: "deprecated 6to4 relay anycast (RFC 7526)", globallyReachable: "n/a" },
  { network: "192.88.99.2", prefix: 32, name: "6a44 relay anycast (RFC 6751)", globallyReachable: false },
  { network: "192.168.0.0", prefix: 16, name: "private use (RFC 1918)", globallyReachable: false },
  { network: "192.175.48.0", prefix: 24, name: "direct delegation AS112 service (RFC 7534)", globallyReachable: true },
  { network: "198.18.0.0", prefix: 15, name: "benchmarking (RFC 2544)", globallyReachable: false },
  { network: "198.51.100.0", prefix: 24, name: "documentation, TEST-NET-2 (RFC 5737)", globallyReachable: false },
  { network: "203.0.113.0", prefix: 24, name: "documentation, TEST-NET-3 (RFC 5737)", globallyReachable: false },
  { network: "224.0.0.0", prefix: 4, name: "multicast (RFC 5771)", globallyReachable: false },
  { network: "240.0.0.0", prefix: 4, name: "reserved (RFC 1112)", globallyReachable: false },
  { network: "255.255.255.255", prefix: 32, name: "limited broadcast (RFC 919)", globallyReachable: false },
];

/**
 * Every entry of the IPv6 registry, plus what lies outside it but is not
 * global unicast. Only 2000::/3 is allocated for global unicast, so
 * everything outside it is refused, apart from the forms that embed an IPv4
 * address (`embeddedIpv4`), which are decided by that address. Inside it, the
 * registry's blocks are refused, globally reachable ones too (see above).
 */
export const SPECIAL_IPV6: readonly SpecialRange[] = [
  { network: "::1", prefix: 128, name: "loopback (RFC 4291)", globallyReachable: false },
  { network: "::", prefix: 128, name: "unspecified (RFC 4291)", globallyReachable: false },
  { network: "::ffff:0:0", prefix: 96, name: "IPv4-mapped (RFC 4291): decided by the embedded IPv4", globallyReachable: false },
  { network: "64:ff9b::", prefix: 96, name: "IPv4/IPv6 translation (RFC 6052): decided by the embedded IPv4", globallyReachable: true },
  { network: "64:ff9b:1::", prefix: 48, name: "local-use IPv4/IPv6 translation (RFC 8215)", globallyReachable: false },
  { network: "100::", prefix: 64, name: "discard-only (RFC 6666)", globallyReachable: false },
  { network: "100:0:0:1::", prefix: 64, name: "dummy IPv6 prefix (RFC 9780)", globallyReachable: false },
  { network: "2001::", prefix: 23, name: "IETF protocol assignments (RFC 2928)", globallyReachable: false },
  { network: "2001::", prefix: 32, name: "Teredo (RFC 4380, RFC 8190)", globallyReachable: "n/a" },
  { network: "2001:1::1", prefix: 128, name: "Port Control Protocol anycast (RFC 7723)", globallyReachable: true },
  { network: "2001:1::2", prefix: 128, name: "TURN anycast (RFC 8155)", globallyReachable: true },
  { network: "2001:1::3", prefix: 128, name: "DNS-SD service registration anycast (RFC 9665)", globallyReachable: true },
  { network: "2001:2::", prefix: 48, name: "benchmarking (RFC 5180)", globallyReachable: false },
  { network: "2001:3::", prefix: 32, name: "AMT (RFC 7450)", globallyReachable: true },
  { network: "2001:4:112::", prefix: 48, name: "AS112-v6 (RFC 7535)", globallyReachable: true },
  { network: "2001:10::", prefix: 28, name: "deprecated ORCHID (RFC 4843)", globallyReachable: "n/a" },
  { network: "2001:20::", prefix: 28, name: "ORCHIDv2 (RFC 7343)", globallyReachable: true },
  { network: "2001:30::", prefix: 28, name: "drone remote ID entity tags (RFC 9374)", globallyReachable: true },
  { network: "2001:db8::", prefix: 32, name: "documentation (RFC 3849)", globallyReachable: false },
  { network: "2002::", prefix: 16, name: "6to4 (RFC 3056): decided by the embedded IPv4", globallyReachable: "n/a" },
  { network: "2620:4f:8000::", prefix: 48, name: "direct delegation AS112 service (RFC 7534)", globallyReachable: true },
  { network: "3fff::", prefix: 20, name: "documentation (RFC 9637)", globallyReachable: false },
  { network: "5f00::", prefix: 16, name: "segment routing SIDs (RFC 9602)", globallyReachable: false },
  { network: "fc00::", prefix: 7, name: "unique local (RFC 4193)", globallyReachable: false },
  { network: "fe80::", prefix: 10, name: "link-local unicast (RFC 4291)", globallyReachable: false },
  // Not in the registry, and not global unicast either:
  { network: "fec0::", prefix: 10, name: "site-local, deprecated (RFC 3879)", globallyReachable: false },
  { network: "ff00::", prefix: 8, name: "multicast (RFC 4291)", globallyReachable: false },
];

function blockList(ranges: readonly SpecialRange[], family: "ipv4" | "ipv6"): BlockList {
  const list = new BlockList();
  for (const { network, prefix } of ranges) list.addSubnet(network, prefix, family);
  return list;
}

const specialV4 = blockList(SPECIAL_IPV4, "ipv4");
const specialV6 = blockList(SPECIAL_IPV6, "ipv6");
const globalUnicastV6 = blockList([{ network: "2000::", prefix: 3, name: "global unicast", globallyReachable: true }], "ipv6");

/** Expands an IPv6 literal to its eight 16-bit groups. */
export function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().split("%")[0] ?? "";
  // A trailing dotted quad (::ffff:1.2.3.4) becomes two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const bytes = dotted[1].split(".").map(Number);
    text = `${text.slice(0, -dotted[1].length)}${(((bytes[0] ?? 0) << 8) | (bytes[1] ?? 0)).toString(16)}:${(((bytes[2] ?? 0) << 8) | (bytes[3] ?? 0)).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const missing = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<string>(missing).fill("0"), ...right].map((group) => Number.parseInt(group, 16));
}

function v4FromGroups(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** The IPv4 address an IPv6 address embeds (mapped, compatible, NAT64 64:ff9b::/96, 6to4), if any. */
export function embeddedIpv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  if (g.length !== 8) return undefined;
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const leadingZeros = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (leadingZeros && (g5 === 0xffff || g5 === 0) && !(g5 === 0 && g6 === 0 && g7 <= 1)) return v4FromGroups(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return v4FromGroups(g6, g7);
  if (g0 === 0x2002) return v4FromGroups(g1, g2);
  return undefined;
}

/** True when `address` (an IP literal) is an ordinary global unicast address: the one place this is decided. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !specialV4.check(address, "ipv4");
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return isPublicAddress(v4);
    return globalUnicastV6.check(address, "ipv6") && !specialV6.check(address, "ipv6");
  }
  return false;
}
