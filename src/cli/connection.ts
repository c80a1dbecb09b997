import type { DescService } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

/** Where the service is and the credentials to present: flags first, then the environment. */
export interface ConnectionOptions {
  server?: string;
  apiKey?: string;
  adminToken?: string;
}

export type Credential = "apiKey" | "adminToken";

/** A user mistake the CLI reports in one line before calling anything. */
export class UsageError extends Error {}

const DEFAULT_URL = "http://localhost:8080";

/** Clients of the generated services over the Connect protocol, each presenting the credential its service takes. */
export class Connection {
  constructor(
    private readonly options: ConnectionOptions,
    private readonly env: Record<string, string | undefined>,
  ) {}

  /** The service's URL as given; `host:port` means `http://host:port`, as curl reads it. */
  get url(): string {
    const given = this.options.server ?? this.env.WEBHOOKS_URL ?? DEFAULT_URL;
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? given : `http://${given}`;
  }

  /** The credential given, the API key first; undefined when none is. */
  get available(): Credential | undefined {
    if (this.#secret("apiKey")) return "apiKey";
    if (this.#secret("adminToken")) return "adminToken";
    return undefined;
  }

  client<S extends DescService>(service: S, credential: Credential): Client<S> {
    const secret = this.#secret(credential);
    if (!secret) {
      throw new UsageError(
        credential === "apiKey"
          ? "no API key: pass --api-key or set WEBHOOKS_API_KEY"
          : "no admin token: pass --admin-token or set WEBHOOKS_ADMIN_TOKEN",
      );
    }
    const authorize: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${secret}`);
      return next(req);
    };
    let baseUrl: URL;
    try {
      baseUrl = new URL(this.url);
    } catch {
      throw new UsageError(`not a URL: ${this.url} (--server or WEBHOOKS_URL)`);
    }
    if (baseUrl.protocol !== "http:" && baseUrl.protocol !== "https:") {
      throw new UsageError(`not an http:// or https:// URL: ${this.url} (--server or WEBHOOKS_URL)`);
    }
    return createClient(
      service,
      createConnectTransport({ baseUrl: baseUrl.toString(), httpVersion: "1.1", interceptors: [authorize, this.#unreachableHint()] }),
    );
  }

  /** A service that cannot be reached says where it was looked for. */
  #unreachableHint(): Interceptor {
    return (next) => async (req) => {
      try {
        return await next(req);
      } catch (error) {
        const connectError = ConnectError.from(error);
        if (connectError.code !== Code.Unavailable || !isNetworkError(connectError.cause)) throw error;
        throw new ConnectError(`${connectError.rawMessage}: is the service running at ${this.url}?`, Code.Unavailable);
      }
    };
  }

  #secret(credential: Credential): string | undefined {
    return credential === "apiKey"
      ? this.options.apiKey || this.env.WEBHOOKS_API_KEY || undefined
      : this.options.adminToken || this.env.WEBHOOKS_ADMIN_TOKEN || undefined;
  }
}

/** A connection that failed below HTTP: refused, no such host, unreachable, reset. */
function isNetworkError(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ECONNRESET|ETIMEDOUT)$/.test(code);
}
