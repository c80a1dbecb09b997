import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { type ClientDirectory, secretsEqual } from "../domain/clients.js";
import { StoreUnavailableError, UnauthenticatedError } from "../domain/errors.js";
import type { Client } from "../domain/model.js";
import { toConnectError } from "./error-mapping.js";

/** The authenticated client of the current call. */
export const clientKey = createContextKey<Client | undefined>(undefined, { description: "authenticated client" });

/** The client set by the auth interceptor; a call without one is a wiring bug. */
export function requireClient(values: { get<T>(key: { id: symbol; defaultValue: T }): T }): Client {
  const client = values.get(clientKey);
  if (!client) throw new ConnectError("no authenticated client", Code.Unauthenticated);
  return client;
}

/** One log line per call, with its outcome code and duration. */
export function createLoggingInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const rpc = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      log.info({ rpc, code: "ok", ms: Math.round(performance.now() - started) }, "rpc");
      return res;
    } catch (error) {
      const code = ConnectError.from(error).code;
      log.info({ rpc, code: Code[code], ms: Math.round(performance.now() - started) }, "rpc");
      throw error;
    }
  };
}

/** Maps domain errors to Connect codes; hides unexpected ones behind `internal`. */
export function createErrorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      const mapped = toConnectError(error);
      if (error instanceof StoreUnavailableError)
        log.warn({ err: error, rpc: `${req.service.typeName}/${req.method.name}` }, "store unavailable");
      if (mapped) throw mapped;
      log.error({ err: error, rpc: `${req.service.typeName}/${req.method.name}` }, "unexpected error");
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}

/** `Authorization: Bearer <api key>` → the client, stored in the call's context. */
export function createClientAuthInterceptor(directory: ClientDirectory): Interceptor {
  return (next) => async (req) => {
    const client = await directory.authenticate(bearerToken(req.header.get("authorization")));
    req.contextValues.set(clientKey, client);
    return next(req);
  };
}

/** `Authorization: Bearer <ADMIN_TOKEN>` for the internal services. */
export function createAdminAuthInterceptor(adminToken: string | undefined): Interceptor {
  return (next) => async (req) => {
    if (!adminToken) throw new UnauthenticatedError("the internal API is off: start the service with ADMIN_TOKEN set");
    const presented = bearerToken(req.header.get("authorization"));
    if (!presented || !secretsEqual(presented, adminToken)) throw new UnauthenticatedError("invalid admin token");
    return next(req);
  };
}

function bearerToken(header: string | null): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1];
}
