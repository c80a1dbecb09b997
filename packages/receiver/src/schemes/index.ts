import type { SignatureScheme } from "./scheme.js";
import { standardWebhooksScheme } from "./standard-webhooks.js";
import { xSignatureScheme } from "./x-signature.js";

/** The signing schemes a receiver understands, by the name its `scheme` option takes. */
export const SCHEMES = {
  /** The service's own: RSA SHA-256 `X-Signature` over the body, `X-JobId`, `X-JobAttempt`. */
  X_SIGNATURE: xSignatureScheme,
  /** Standard Webhooks, for subscriptions created with `signatureScheme: STANDARD_WEBHOOKS`; the keys are `whsec_…` secrets. */
  STANDARD_WEBHOOKS: standardWebhooksScheme,
} as const satisfies Record<string, SignatureScheme>;

export type SchemeName = keyof typeof SCHEMES;

export function schemeNamed(name: SchemeName): SignatureScheme {
  const scheme = SCHEMES[name];
  if (!scheme) throw new TypeError(`scheme: unknown signing scheme ${JSON.stringify(name)}; known: ${Object.keys(SCHEMES).join(", ")}`);
  return scheme;
}

export type { SchemeResult, SignatureScheme } from "./scheme.js";
