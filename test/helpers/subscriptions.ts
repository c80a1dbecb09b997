import { newId } from "../../src/domain/ids.js";
import type { KeySealer } from "../../src/domain/key-sealing.js";
import type { Subscription } from "../../src/domain/model.js";
import { generateSigningKeyPair } from "../../src/domain/signature.js";

/** An enabled RSA subscription of `clientId` to Order.Created at `url`, its private key sealed as the service seals it. */
export async function signedSubscription(sealer: KeySealer, clientId: string, url: string, at = new Date()): Promise<Subscription> {
  const keys = await generateSigningKeyPair(2048);
  const id = newId("sub");
  return {
    id,
    clientId,
    event: "Order.Created",
    url,
    description: "",
    enabled: true,
    signatureScheme: "RSA_SHA256",
    publicKeyPem: keys.publicKeyPem,
    privateKeyPem: sealer.seal(keys.privateKeyPem, id),
    createdAt: at,
    updatedAt: at,
  };
}
