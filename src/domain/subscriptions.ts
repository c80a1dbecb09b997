import { type CustomHeaders, checkHeaders, maskHeaders, openHeaders, sealHeaders } from "./custom-headers.js";
import { ConflictError, FailedPreconditionError, NotFoundError, QuotaExceededError, ValidationError } from "./errors.js";
import type { EventCatalog } from "./event-catalog.js";
import { isWellFormedId, newId } from "./ids.js";
import type { KeySealer } from "./key-sealing.js";
import type { JsonObject, SignatureScheme, Subscription } from "./model.js";
import { decodePageToken, type Page, pageSize, paginate } from "./pagination.js";
import { checkFilter } from "./payload-filter.js";
import type { QuotaRefusal, SubscriptionStore } from "./ports.js";
import { RELAY_SCHEME, relayUrl } from "./relay.js";
import { DEFAULT_SIGNATURE_SCHEME, generateKeyMaterial } from "./signature-schemes.js";
import { normaliseTargetUrl, type TargetPolicy } from "./target-url.js";
import { assertPlainText } from "./text.js";

export interface CreateSubscriptionInput {
  event: string;
  url: string;
  description: string;
  /** Fixed for the subscription's life; RSA_SHA256 when absent. */
  signatureScheme?: SignatureScheme;
  /** A relay subscription (see relay.ts): no URL; `url` must be empty. */
  relay?: boolean;
  /** With `relay`: held by a lease that listeners' streams renew, deleted once it ends (relay-leases.ts). */
  temporary?: boolean;
  /** Most deliveries per second; 0 or absent: no limit. */
  rateLimitPerSecond?: number;
  /** Sent with every delivery; empty or absent: none. */
  headers?: CustomHeaders;
  /** Which notifications it takes; empty or absent: every one. */
  filter?: JsonObject;
}

/** What the owner verifies deliveries with, as the API shows it. */
export interface SignatureKeys {
  /** RSA_SHA256: the SPKI PEM public key. STANDARD_WEBHOOKS: the `whsec_` secret. STANDARD_WEBHOOKS_ED25519: the `whpk_` public key. */
  signatureKey: string;
  /** The same for the key that takes over, during a rotation. */
  nextSignatureKey?: string;
}

export interface SubscriptionChanges {
  url?: string;
  description?: string;
  enabled?: boolean;
  /** 0: no limit. */
  rateLimitPerSecond?: number;
  /** Replaces every custom header (values must be strings); {} removes them. */
  headers?: JsonObject;
  /** Replaces the filter; {} removes it. */
  filter?: JsonObject;
}

export interface SubscriptionsDeps {
  store: SubscriptionStore;
  catalog: EventCatalog;
  targetPolicy: TargetPolicy;
  signingKeyBits: number;
  /** How long the old key keeps signing after a rotation starts. */
  rotationGraceMs: number;
  /** Private keys are stored sealed. */
  sealer: KeySealer;
  /** Subscriptions a client may hold unless it has a quota of its own (MAX_SUBSCRIPTIONS_PER_CLIENT). */
  maxSubscriptionsPerClient: number;
  /** How long a new temporary relay subscription's lease runs before a listener's stream renews it (RELAY_LEASE). */
  relayLeaseMs: number;
}

export const MAX_DESCRIPTION_LENGTH = 1000;

/**
 * The subscription as of `now`: a rotation whose deadline passed has
 * completed, whether or not anyone wrote that down yet.
 */
export function settleRotation(subscription: Subscription, now = new Date()): Subscription {
  const { nextPublicKeyPem, nextPrivateKeyPem, rotationDeadline, ...rest } = subscription;
  if (!nextPublicKeyPem || !nextPrivateKeyPem || !rotationDeadline) return subscription;
  if (rotationDeadline > now) return subscription;
  return { ...rest, publicKeyPem: nextPublicKeyPem, privateKeyPem: nextPrivateKeyPem };
}

function assertDescription(description: string): void {
  assertPlainText(description, "description");
  if (description.length > MAX_DESCRIPTION_LENGTH) {
    throw new ValidationError(`description is longer than ${MAX_DESCRIPTION_LENGTH} characters`, "description");
  }
}

export const MAX_RATE_LIMIT_PER_SECOND = 10_000;

/** The limit as stored: undefined for none. */
function rateLimit(value: number | undefined): number | undefined {
  if (value === undefined || value === 0) return undefined;
  if (!Number.isInteger(value) || value < 0 || value > MAX_RATE_LIMIT_PER_SECOND) {
    throw new ValidationError(
      `rateLimitPerSecond must be a whole number from 0 (no limit) to ${MAX_RATE_LIMIT_PER_SECOND}, not ${value}`,
      "rateLimitPerSecond",
    );
  }
  return value;
}

/** The filter as stored: undefined for none. */
function payloadFilter(filter: JsonObject | undefined): JsonObject | undefined {
  return filter === undefined || Object.keys(filter).length === 0 ? undefined : checkFilter(filter);
}

/** Throws the error a refused create answers with. */
function refuse(refusal: QuotaRefusal | undefined, event: string): void {
  if (refusal === undefined) return;
  if ("duplicateOf" in refusal) {
    throw new ConflictError(
      `subscription ${refusal.duplicateOf} already sends ${event} to this url with this signature scheme; use it, or delete it first`,
    );
  }
  throw new QuotaExceededError(
    `subscription limit reached: a client may hold ${refusal.quota} subscriptions; delete one first, or ask an operator for a higher limit`,
  );
}

/** A client's subscriptions: create, read, change, rotate keys, delete. */
export class Subscriptions {
  constructor(private readonly deps: SubscriptionsDeps) {}

  async create(clientId: string, input: CreateSubscriptionInput): Promise<Subscription> {
    const event = (await this.deps.catalog.require(input.event)).name;
    if (input.relay && input.url !== "") throw new ValidationError("a relay subscription has no url: leave it empty", "url");
    if (input.temporary && !input.relay)
      throw new ValidationError("only a relay subscription can be temporary: set relay too, or leave temporary out", "temporary");
    const id = newId("sub");
    const url = input.relay ? relayUrl(id) : normaliseTargetUrl(input.url, this.deps.targetPolicy);
    assertDescription(input.description);
    const rateLimitPerSecond = rateLimit(input.rateLimitPerSecond);
    const sealedHeaders = sealHeaders(this.deps.sealer, checkHeaders(input.headers ?? {}), id);
    const filter = payloadFilter(input.filter);
    const signatureScheme = input.signatureScheme ?? DEFAULT_SIGNATURE_SCHEME;
    // Refused before its keys are made: a client over its quota must not keep the key generator busy.
    const { maxSubscriptionsPerClient: quota, store } = this.deps;
    refuse(await store.refusal({ id, clientId, event, url, signatureScheme }, quota), event);
    const keys = await generateKeyMaterial(signatureScheme, this.deps.signingKeyBits);
    const now = new Date();
    const subscription: Subscription = {
      id,
      clientId,
      event,
      url,
      description: input.description,
      enabled: true,
      signatureScheme,
      publicKeyPem: keys.publicKeyPem,
      privateKeyPem: this.deps.sealer.seal(keys.privateKeyPem, id),
      ...(rateLimitPerSecond ? { rateLimitPerSecond } : {}),
      ...(sealedHeaders ? { sealedHeaders } : {}),
      ...(filter ? { filter } : {}),
      ...(input.temporary ? { leaseExpiresAt: new Date(now.getTime() + this.deps.relayLeaseMs) } : {}),
      createdAt: now,
      updatedAt: now,
    };
    const outcome = await store.insertWithinQuota(subscription, quota);
    if (!outcome.inserted) refuse(outcome, event);
    return subscription;
  }

  /** The client's subscription; another client's is "not found", never "forbidden". */
  async get(clientId: string, id: string): Promise<Subscription> {
    const subscription = isWellFormedId("sub", id) ? await this.deps.store.get(id) : undefined;
    if (!subscription || subscription.clientId !== clientId)
      throw new NotFoundError(`subscription ${JSON.stringify(id.slice(0, 64))} not found`);
    return settleRotation(subscription);
  }

  async list(clientId: string, requestedSize: number, pageToken: string): Promise<Page<Subscription>> {
    const after = decodePageToken(pageToken);
    const page = await paginate(pageSize(requestedSize), (limit) => this.deps.store.listByClient(clientId, limit, after));
    return { ...page, items: page.items.map((s) => settleRotation(s)) };
  }

  async update(clientId: string, id: string, changes: SubscriptionChanges): Promise<Subscription> {
    const current = await this.get(clientId, id);
    const now = new Date();
    let next: Subscription = { ...current, updatedAt: now };
    if (changes.url !== undefined) {
      next.url = normaliseTargetUrl(changes.url, this.deps.targetPolicy);
      if (next.url !== current.url) await this.#refuseDuplicate(next);
    }
    if (changes.description !== undefined) {
      assertDescription(changes.description);
      next.description = changes.description;
    }
    if (changes.rateLimitPerSecond !== undefined) {
      const { rateLimitPerSecond: _old, ...rest } = next;
      const limit = rateLimit(changes.rateLimitPerSecond);
      next = limit ? { ...rest, rateLimitPerSecond: limit } : rest;
    }
    if (changes.headers !== undefined) {
      const { sealedHeaders: _old, ...rest } = next;
      const sealedHeaders = sealHeaders(this.deps.sealer, checkHeaders(changes.headers), id);
      next = sealedHeaders ? { ...rest, sealedHeaders } : rest;
    }
    if (changes.filter !== undefined) {
      const { filter: _old, ...rest } = next;
      const filter = payloadFilter(changes.filter);
      next = filter ? { ...rest, filter } : rest;
    }
    if (changes.enabled === true) {
      const { disabledReason: _r, disabledAt: _a, ...enabled } = next;
      next = { ...enabled, enabled: true };
    } else if (changes.enabled === false && current.enabled) {
      next = { ...next, enabled: false, disabledReason: "disabled by its owner", disabledAt: now };
    }
    const saved = await this.#save(next, current.updatedAt);
    if (changes.enabled === true && current.failingSince) {
      // Re-enabling is the owner saying "try again": the failure streak starts over.
      await this.deps.store.markHealthy(current.id);
      const { failingSince: _f, ...fresh } = saved;
      return fresh;
    }
    return saved;
  }

  /** A change of URL may not make the subscription a copy of another (same event, URL and scheme): create refuses that too. */
  async #refuseDuplicate(changed: Subscription): Promise<void> {
    const same = (await this.deps.store.findByUrl(changed.clientId, changed.url)).find(
      (other) => other.id !== changed.id && other.event === changed.event && other.signatureScheme === changed.signatureScheme,
    );
    if (same) refuse({ inserted: false, duplicateOf: same.id }, changed.event);
  }

  async delete(clientId: string, id: string): Promise<void> {
    await this.get(clientId, id);
    if (!(await this.deps.store.delete(id))) throw new NotFoundError(`subscription ${id} not found`);
  }

  /** Starts a rotation; rotating again replaces the pending key. */
  async rotateKey(clientId: string, id: string): Promise<Subscription> {
    const current = await this.get(clientId, id);
    const keys = await generateKeyMaterial(current.signatureScheme, this.deps.signingKeyBits);
    const now = new Date();
    return this.#save(
      {
        ...current,
        nextPublicKeyPem: keys.publicKeyPem,
        nextPrivateKeyPem: this.deps.sealer.seal(keys.privateKeyPem, current.id),
        rotationDeadline: new Date(now.getTime() + this.deps.rotationGraceMs),
        updatedAt: now,
      },
      current.updatedAt,
    );
  }

  /** Ends a rotation now: the new key signs from here on. */
  async confirmRotation(clientId: string, id: string): Promise<Subscription> {
    const current = await this.get(clientId, id);
    if (!current.nextPublicKeyPem) throw new ValidationError("no key rotation is in progress; start one with rotateSignatureKey");
    return this.#save({ ...settleRotation({ ...current, rotationDeadline: new Date(0) }), updatedAt: new Date() }, current.updatedAt);
  }

  /**
   * What the owner verifies with. A Standard Webhooks secret is unsealed for
   * the answer: it is the verifying key, and only its owner reads it.
   */
  signatureKeys(subscription: Subscription): SignatureKeys {
    const { publicKeyPem, privateKeyPem, nextPublicKeyPem, nextPrivateKeyPem } = subscription;
    if (subscription.signatureScheme !== "STANDARD_WEBHOOKS") {
      return { signatureKey: publicKeyPem, ...(nextPublicKeyPem ? { nextSignatureKey: nextPublicKeyPem } : {}) };
    }
    const open = (sealed: string) => this.deps.sealer.open(sealed, subscription.id);
    return { signatureKey: open(privateKeyPem), ...(nextPrivateKeyPem ? { nextSignatureKey: open(nextPrivateKeyPem) } : {}) };
  }

  /**
   * The custom headers as the API shows them: each value masked, unless
   * `inTheClear` (only in the answer to the subscription's creation, which
   * holds nothing its caller did not just send).
   */
  shownHeaders(subscription: Subscription, inTheClear = false): CustomHeaders {
    const headers = openHeaders(this.deps.sealer, subscription);
    return inTheClear ? headers : maskHeaders(headers);
  }

  /**
   * The subscription a sample for `url` is signed with: the caller's own
   * enabled subscription of that URL to that event. A receiver never gets a
   * validly signed notification of an event it did not subscribe to.
   */
  async forSample(clientId: string, event: string, url: string): Promise<Subscription> {
    const normalised = url.startsWith(RELAY_SCHEME) ? url : normaliseTargetUrl(url, { allowPrivateTargets: true, allowHttpTargets: true });
    const candidates = (await this.deps.store.findByUrl(clientId, normalised)).filter((s) => s.enabled);
    const chosen = candidates.find((s) => s.event === event);
    if (chosen) return settleRotation(chosen);
    if (candidates.length === 0) {
      throw new ValidationError(
        "url is not the URL of one of your enabled subscriptions; create a subscription for it first (its key signs the sample)",
        "url",
      );
    }
    const taken = [...new Set(candidates.map((s) => s.event))].join(", ");
    throw new FailedPreconditionError(
      `the subscription of ${normalised} takes ${taken}, not ${event}: send a sample of ${taken}, or subscribe the URL to ${event} first`,
    );
  }

  /** Writes unless someone changed the subscription since `readAt` (409 then, never a silent overwrite). */
  async #save(subscription: Subscription, readAt: Date): Promise<Subscription> {
    if (await this.deps.store.update(subscription, readAt)) return subscription;
    if (!(await this.deps.store.get(subscription.id))) throw new NotFoundError(`subscription ${subscription.id} not found`);
    throw new ConflictError("the subscription changed while this request was handled; read it again and retry");
  }
}
