import { createPrivateKey, createPublicKey, generateKeyPair, type KeyObject, sign, verify } from "node:crypto";
import { promisify } from "node:util";

const generateKeyPairAsync = promisify(generateKeyPair);

export interface SigningKeyPair {
  /** SPKI PEM: what the subscriber verifies with. */
  publicKeyPem: string;
  /** PKCS#8 PEM: stays in the service. */
  privateKeyPem: string;
}

/** A fresh RSA key pair for one subscription. */
export async function generateSigningKeyPair(bits: number): Promise<SigningKeyPair> {
  const { publicKey, privateKey } = await generateKeyPairAsync("rsa", {
    modulusLength: bits,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return { publicKeyPem: publicKey, privateKeyPem: privateKey };
}

/**
 * `X-Signature`: Base64 of RSASSA-PKCS1-v1_5 with SHA-256 over the exact body
 * bytes, the "SHA-256 with RSA" of the specification. Signed on libuv's
 * thread pool: RSA signing is most of a delivery's CPU, and there it runs
 * beside the event loop instead of blocking it.
 */
export function signBody(body: string | Uint8Array, privateKey: KeyObject | string): Promise<string> {
  const key = typeof privateKey === "string" ? createPrivateKey(privateKey) : privateKey;
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  return new Promise((resolve, reject) =>
    sign("sha256", bytes, key, (error, signature) => (error ? reject(error) : resolve(signature.toString("base64")))),
  );
}

/** What a subscriber does with the body, the header and the subscription's key. */
export function verifyBody(body: string | Uint8Array, signatureBase64: string, publicKeyPem: string | KeyObject): boolean {
  const key = typeof publicKeyPem === "string" ? createPublicKey(publicKeyPem) : publicKeyPem;
  return verify("sha256", typeof body === "string" ? Buffer.from(body, "utf8") : body, key, Buffer.from(signatureBase64, "base64"));
}
