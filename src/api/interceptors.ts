import { Code, ConnectError, type ContextValues, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { type ClientDirectory, secretMatcher } from "../domain/clients.js";
import { StoreUnavailableError, UnauthenticatedError } from "../domain/errors.js";
import type { Client } from "../domain/model.js";
import { bearerToken } from "./bearer-token.js";
import { edgeFacts } from "./edge-facts.js";
import { toConnectError } from "./error-mapping.js";

/** The authenticated client of the current call. */
export const clientKey = createContextKey<Client | undefined>(undefined, { description: "authenticated client" });

/** The client set by the auth interceptor; a call without one is a wiring bug. */
export function requireClient(values: { get<T>(key: { id: symbol; defaultValue: T }): T }): Client {
  const client = values.get(clientKey);
  if (!client) throw new ConnectError("no authenticated client", Code.Unauthenticated);
  return client;
}

/** What every log line of a call carries: the RPC and the request id (X-Request-Id). */
function callFields(req: { service: { typeName: string }; method: { name: string }; contextValues: ContextValues }) {
  return { rpc: `${req.service.typeName}/${req.method.name}`, requestId: edgeFacts(req.contextValues).requestId };
}

/** gRPC health and reflection: probes and tools call them every few seconds, so they are not logged at info nor traced. */
export function isEcosystemService(typeName: string): boolean {
  return typeName.startsWith("grpc.");
}

/**
 * The messages of a streaming response, with `onEnd` told how the stream
 * ended (undefined: completed; `canceled`: the client went away; or the
 * error) and `mapError` applied to an error thrown while it streams (after
 * the call itself has returned, where a plain try/catch no longer reaches).
 */
async function* watchedStream<T>(
  messages: AsyncIterable<T>,
  onEnd: (outcome: unknown) => void,
  mapError: (error: unknown) => unknown = (error) => error,
): AsyncIterable<T> {
  let outcome: unknown = new ConnectError("the client went away", Code.Canceled);
  try {
    yield* messages;
    outcome = undefined;
  } catch (error) {
    outcome = error;
    throw mapError(error);
  } finally {
    onEnd(outcome);
  }
}

/**
 * One log line per call (for a stream, when it ends), with its request id,
 * the authenticated client's id (once authentication got that far), its
 * outcome code and duration.
 */
export function createLoggingInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const level = isEcosystemService(req.service.typeName) ? "debug" : "info";
    const logEnd = (error: unknown) => {
      if (!log.isLevelEnabled(level)) return;
      const code = error === undefined ? "ok" : Code[ConnectError.from(error).code];
      const clientId = req.contextValues.get(clientKey)?.id;
      log[level]({ ...callFields(req), ...(clientId ? { clientId } : {}), code, ms: Math.round(performance.now() - started) }, "rpc");
    };
    try {
      const res = await next(req);
      if (res.stream) return { ...res, message: watchedStream(res.message, logEnd) };
      logEnd(undefined);
      return res;
    } catch (error) {
      logEnd(error);
      throw error;
    }
  };
}

/** Maps domain errors to Connect codes; hides unexpected ones behind `internal`. */
export function createErrorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const map = (error: unknown): ConnectError => {
      const mapped = toConnectError(error);
      if (error instanceof StoreUnavailableError) log.warn({ err: error, ...callFields(req) }, "store unavailable");
      if (mapped) return mapped;
      log.error({ err: error, ...callFields(req) }, "unexpected error");
      return new ConnectError("internal error", Code.Internal);
    };
    try {
      const res = await next(req);
      return res.stream ? { ...res, message: watchedStream(res.message, () => {}, map) } : res;
    } catch (error) {
      throw map(error);
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
  const isAdminToken = adminToken ? secretMatcher(adminToken) : undefined;
  return (next) => async (req) => {
    if (!isAdminToken) throw new UnauthenticatedError("the internal API is off: start the service with ADMIN_TOKEN set");
    const presented = bearerToken(req.header.get("authorization"));
    if (!presented || !isAdminToken(presented)) throw new UnauthenticatedError("invalid admin token");
    return next(req);
  };
}
