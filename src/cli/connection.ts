import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
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

  get url(): string {
    return this.options.server ?? this.env.WEBHOOKS_URL ?? DEFAULT_URL;
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
    let baseUrl: string;
    try {
      baseUrl = new URL(this.url).toString();
    } catch {
      throw new UsageError(`not a URL: ${this.url} (--server or WEBHOOKS_URL)`);
    }
    return createClient(service, createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [authorize] }));
  }

  #secret(credential: Credential): string | undefined {
    return credential === "apiKey"
      ? this.options.apiKey || this.env.WEBHOOKS_API_KEY || undefined
      : this.options.adminToken || this.env.WEBHOOKS_ADMIN_TOKEN || undefined;
  }
}
