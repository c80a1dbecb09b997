import type { SignatureScheme } from "./model.js";
import { generateSigningKeyPair, type SigningKeyPair } from "./signature.js";
import { generateEd25519KeyPair, generateSecret, secretFingerprint } from "./standard-webhooks.js";

/** The specification's scheme, for subscriptions that name none. */
export const DEFAULT_SIGNATURE_SCHEME: SignatureScheme = "RSA_SHA256";

/**
 * Fresh key material for one subscription of this scheme: `publicKeyPem` is
 * stored in the clear, `privateKeyPem` only sealed. For STANDARD_WEBHOOKS the
 * secret signs and verifies, so only its fingerprint is in the clear.
 */
export async function generateKeyMaterial(scheme: SignatureScheme, rsaBits: number): Promise<SigningKeyPair> {
  switch (scheme) {
    case "RSA_SHA256":
      return generateSigningKeyPair(rsaBits);
    case "STANDARD_WEBHOOKS": {
      const secret = generateSecret();
      return { publicKeyPem: secretFingerprint(secret), privateKeyPem: secret };
    }
    case "STANDARD_WEBHOOKS_ED25519": {
      const { publicKey, privateKeyPem } = await generateEd25519KeyPair();
      return { publicKeyPem: publicKey, privateKeyPem };
    }
  }
}
