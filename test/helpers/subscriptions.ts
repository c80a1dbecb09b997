import { newId } from "../../src/domain/ids.js";
import type { KeySealer } from "../../src/domain/key-sealing.js";
import type { Notification, Subscription } from "../../src/domain/model.js";
import { generateSigningKeyPair } from "../../src/domain/signature.js";

/**
 * A subscription record as a store holds it: enabled, RSA, `clientId`'s, to
 * Order.Created at https://receiver.example/hook, made now, with stand-in
 * key texts; `fields` replaces any of that.
 */
export function subscriptionRecord(clientId: string, fields: Partial<Subscription> = {}): Subscription {
  const at = fields.createdAt ?? new Date();
  return {
    id: newId("sub"),
    clientId,
    event: "Order.Created",
    url: "https://receiver.example/hook",
    description: "",
    enabled: true,
    signatureScheme: "RSA_SHA256",
    publicKeyPem: "pem",
    privateKeyPem: "sealed",
    createdAt: at,
    updatedAt: at,
    ...fields,
  };
}

/**
 * A notification record as a store holds it: ntf_1 of the subscription sub_1
 * and the client cli_1, an Order.Created with the body {}, pending with no
 * attempt, made now; `fields` replaces any of that.
 */
export function notificationRecord(fields: Partial<Notification> = {}): Notification {
  const at = fields.createdAt ?? new Date();
  return {
    id: "ntf_1",
    subscriptionId: "sub_1",
    clientId: "cli_1",
    event: "Order.Created",
    body: "{}",
    status: "pending",
    attemptCount: 0,
    createdAt: at,
    updatedAt: at,
    ...fields,
  };
}

/** An enabled RSA subscription of `clientId` to Order.Created at `url`, its private key sealed as the service seals it. */
export async function signedSubscription(sealer: KeySealer, clientId: string, url: string, at = new Date()): Promise<Subscription> {
  const keys = await generateSigningKeyPair(2048);
  const id = newId("sub");
  return subscriptionRecord(clientId, {
    id,
    url,
    publicKeyPem: keys.publicKeyPem,
    privateKeyPem: sealer.seal(keys.privateKeyPem, id),
    createdAt: at,
    updatedAt: at,
  });
}
