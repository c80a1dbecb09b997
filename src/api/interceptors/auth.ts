import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { type ClientDirectory, secretMatcher } from "../../domain/clients.js";
import { UnauthenticatedError } from "../../domain/errors.js";
import type { Client } from "../../domain/model.js";
import { bearerToken } from "./bearer-token.js";

/** The authenticated client of the current call. */
export const clientKey = createContextKey<Client | undefined>(undefined, { description: "authenticated client" });

/** The id of the API key the current call authenticated with. */
export const apiKeyIdKey = createContextKey<string | undefined>(undefined, { description: "API key id" });

/** The client set by the auth interceptor; a call without one is a wiring bug. */
export function requireClient(values: { get<T>(key: { id: symbol; defaultValue: T }): T }): Client {
  const client = values.get(clientKey);
  if (!client) throw new ConnectError("no authenticated client", Code.Unauthenticated);
  return client;
}

/** `Authorization: Bearer <api key>` → the client, stored in the call's context. */
export function createClientAuthInterceptor(directory: ClientDirectory): Interceptor {
  return (next) => async (req) => {
    const { client, keyId } = await directory.authenticate(bearerToken(req.header.get("authorization")));
    req.contextValues.set(clientKey, client);
    req.contextValues.set(apiKeyIdKey, keyId);
    return next(req);
  };
}

/** `Authorization: Bearer <ADMIN_TOKEN>` for the internal services. */
export function createAdminAuthInterceptor(adminToken: string | undefined): Interceptor {
  const isAdminToken = adminToken ? secretMatcher(adminToken) : undefined;
  return (next) => async (req) => {
    if (!isAdminToken) throw new UnauthenticatedError("the internal API is off: start the service with ADMIN_TOKEN set");
    const presented = bearerToken(req.header.get("authorization"));
    if (!presented || !isAdminToken(presented)) throw new UnauthenticatedError("invalid admin token");
    return next(req);
  };
}
