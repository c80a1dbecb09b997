import { isIP } from "node:net";
import { ForbiddenTargetError, ValidationError } from "./errors.js";
import { isPublicAddress } from "./ip-address.js";

export interface TargetPolicy {
  /** Loopback, private and other non-public hosts (dev and tests only). */
  allowPrivateTargets: boolean;
  /** Plain `http://` endpoints. */
  allowHttpTargets: boolean;
}

export const MAX_URL_LENGTH = 2048;

/**
 * Validates a subscriber's endpoint URL and returns its normalised form.
 * This checks the URL as typed; the sender checks the resolved address again
 * at every attempt.
 */
export function normaliseTargetUrl(raw: string, policy: TargetPolicy, field = "url"): string {
  if (raw.trim() === "") throw new ValidationError(`${field} is required: the https:// URL that receives notifications`, field);
  if (raw.length > MAX_URL_LENGTH) throw new ValidationError(`${field} is longer than ${MAX_URL_LENGTH} characters`, field);
  // The URL parser silently drops tabs and newlines; a URL holding them was not meant as typed.
  if (/[\s\p{Cc}]/u.test(raw)) throw new ValidationError(`${field} contains whitespace or control characters`, field);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ValidationError(`${field} is not an absolute URL: ${JSON.stringify(raw.slice(0, 200))}`, field);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    const allowed = policy.allowHttpTargets ? "https:// or http://" : "https://";
    throw new ForbiddenTargetError(`${field} must use ${allowed} (got ${url.protocol.replace(/:$/, "")})`, field);
  }
  if (url.protocol === "http:" && !policy.allowHttpTargets) {
    throw new ForbiddenTargetError(`${field} must use https://; plain http:// is disabled on this service`, field);
  }
  if (url.username || url.password) {
    throw new ForbiddenTargetError(`${field} must not carry credentials (user:password@)`, field);
  }
  if (!policy.allowPrivateTargets) assertPublicHost(url.hostname, field);
  url.hash = "";
  // An empty query ("…/hook?") names the same endpoint as none: kept, it would slip past the duplicate check.
  if (url.search === "") url.search = "";
  return url.toString();
}

/** Refuses hosts that can only name something inside our own network. */
export function assertPublicHost(hostname: string, field = "url"): void {
  const host = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  if (isIP(host)) {
    if (!isPublicAddress(host)) throw new ForbiddenTargetError(`${field} points at a non-public address (${host})`, field);
    return;
  }
  const lower = host.toLowerCase().replace(/\.$/, "");
  if (!lower.includes(".")) throw new ForbiddenTargetError(`${field} host ${JSON.stringify(host)} is not a public domain name`, field);
  if (lower === "localhost" || lower.endsWith(".localhost") || lower.endsWith(".local") || lower.endsWith(".internal")) {
    throw new ForbiddenTargetError(`${field} host ${JSON.stringify(host)} is not a public domain name`, field);
  }
}
