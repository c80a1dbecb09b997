import { verify } from "node:crypto";
import { InvalidSignatureError, MalformedHeaderError } from "../errors.js";
import { type HeaderLookup, requireHeader } from "../headers.js";
import { type KeyInput, publicKeyOf } from "../keys.js";
import type { SchemeResult, SignatureScheme } from "./scheme.js";

/** The service's headers, as the specification names them. */
export const SIGNATURE_HEADER = "X-Signature";
export const JOB_ID_HEADER = "X-JobId";
export const JOB_ATTEMPT_HEADER = "X-JobAttempt";

/** The specification's attempts: 0 is the first delivery, then at most five retries. */
export const MAX_ATTEMPT = 5;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ATTEMPT = /^\d$/;

/**
 * `X-Signature`: Base64 RSASSA-PKCS1-v1_5 with SHA-256 over the exact body
 * bytes, verified with the subscription's PEM SPKI `signatureKey`. The
 * signature covers the body only: `X-JobId` and `X-JobAttempt` are not signed.
 */
export const xSignatureScheme: SignatureScheme = {
  checkKeys(keys: readonly KeyInput[]): void {
    for (const key of keys) publicKeyOf(key);
  },

  verify(body: Uint8Array, header: HeaderLookup, keys: readonly KeyInput[]): SchemeResult {
    const signatureText = requireHeader(header, SIGNATURE_HEADER).trim();
    const jobId = requireHeader(header, JOB_ID_HEADER).trim();
    const attemptText = requireHeader(header, JOB_ATTEMPT_HEADER).trim();
    if (!ATTEMPT.test(attemptText) || Number(attemptText) > MAX_ATTEMPT) {
      throw new MalformedHeaderError(JOB_ATTEMPT_HEADER, `must be an integer from 0 to ${MAX_ATTEMPT}`);
    }
    if (!BASE64.test(signatureText)) throw new InvalidSignatureError(`${SIGNATURE_HEADER} is not Base64`);
    const signature = Buffer.from(signatureText, "base64");
    const keyIndex = keys.findIndex((key) => verify("sha256", body, publicKeyOf(key), signature));
    if (keyIndex < 0) {
      throw new InvalidSignatureError(
        `${SIGNATURE_HEADER} does not verify over the raw body with ${keys.length === 1 ? "the key" : `any of the ${keys.length} keys`}`,
      );
    }
    return { keyIndex, jobId, attempt: Number(attemptText), headersSigned: false };
  },
};
