/** The token of an `Authorization: Bearer <token>` header, or undefined when there is none. */
export function bearerToken(header: string | null | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(header ?? "")?.[1];
}
