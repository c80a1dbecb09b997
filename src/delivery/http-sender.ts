import { lookup as dnsLookup } from "node:dns";
import type { IncomingHttpHeaders } from "node:http";
import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import { Agent, type Dispatcher, errors as undiciErrors } from "undici";
import { ForbiddenTargetError } from "../domain/errors.js";
import { isPublicAddress } from "../domain/ip-address.js";
import { assertPublicHost } from "../domain/target-url.js";

export interface HttpSenderOptions {
  timeoutMs: number;
  /** How much of a response body is kept for the delivery log. */
  maxResponseBytes: number;
  allowPrivateTargets: boolean;
  userAgent: string;
}

export interface SendRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** Aborted when the service shuts down. */
  signal: AbortSignal;
}

export interface SendResult {
  durationMs: number;
  statusCode?: number;
  responseBody?: string;
  /** Set when no usable response arrived: timeout, refused, reset, forbidden address… */
  error?: string;
  /** From the receiver's Retry-After header. */
  retryAfterMs?: number;
  /** The shutdown signal fired before an answer: the attempt did not count. */
  interrupted: boolean;
}

/**
 * Resolves once, refuses if any resolved address is not public, and hands
 * net.connect exactly the checked address, so DNS rebinding has no second
 * lookup to win.
 */
function publicOnlyLookup(): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      const list = addresses as unknown as { address: string; family: number }[];
      const forbidden = list.find((entry) => !isPublicAddress(entry.address));
      if (forbidden || list.length === 0) {
        const reason = new ForbiddenTargetError(`${hostname} resolves to a non-public address (${forbidden?.address ?? "none"})`);
        return callback(reason as NodeJS.ErrnoException, "", 0);
      }
      if (options.all) return callback(null, list as never);
      const first = list[0] as { address: string; family: number };
      return callback(null, first.address, first.family);
    });
  };
}

export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * POSTs signed notifications through one keep-alive pool per origin. The
 * pools set no cap of their own: the delivery engine already caps requests
 * in flight per endpoint and per client, and a request that queued here for
 * a connection would spend its timeout waiting for our own pool instead of
 * the receiver.
 */
export class HttpSender {
  readonly #agent: Agent;

  constructor(private readonly options: HttpSenderOptions) {
    this.#agent = new Agent({
      // Idle connections close after 30 s, whatever keep-alive a receiver asks for.
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 30_000,
      connections: null,
      connect: options.allowPrivateTargets ? {} : { lookup: publicOnlyLookup() },
    });
  }

  async send(request: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    if (request.signal.aborted) return { durationMs: 0, error: "interrupted by shutdown", interrupted: true };
    const exchange = new Exchange(this.options.maxResponseBytes);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      exchange.abort(new Error("timeout"));
    }, this.options.timeoutMs);
    const onShutdown = () => exchange.abort(new Error("shutdown"));
    request.signal.addEventListener("abort", onShutdown, { once: true });
    try {
      const target = new URL(request.url);
      // Literal IPs never reach the lookup hook, so they are checked here.
      if (!this.options.allowPrivateTargets && isIP(target.hostname.replace(/^\[|\]$/g, ""))) assertPublicHost(target.hostname);
      this.#agent.dispatch(
        {
          origin: target.origin,
          path: `${target.pathname}${target.search}`,
          method: "POST",
          headers: {
            "content-type": "application/json",
            "user-agent": this.options.userAgent,
            ...request.headers,
          },
          body: request.body,
        },
        exchange,
      );
      const response = await exchange.response;
      return {
        durationMs: elapsed(),
        statusCode: response.statusCode,
        responseBody: response.body,
        retryAfterMs: parseRetryAfter(response.headers["retry-after"]),
        interrupted: false,
      };
    } catch (error) {
      if (request.signal.aborted) return { durationMs: elapsed(), error: "interrupted by shutdown", interrupted: true };
      return { durationMs: elapsed(), error: describeFailure(error, timedOut, this.options.timeoutMs), interrupted: false };
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener("abort", onShutdown);
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

interface Response {
  statusCode: number;
  headers: IncomingHttpHeaders;
  /** The first maxBytes of the body, as UTF-8. */
  body: string;
}

/** Past the cap, this much more of an answer is read and dropped to keep its connection; a longer answer closes it. */
const DRAIN_BYTES = 64 * 1024;
/** …and for this long at most. */
const DRAIN_MS = 1_000;

/**
 * One request's handler on undici's dispatch interface: the answer is
 * gathered as it arrives, with no response stream, async iterator or
 * AbortController per request (about a third of a request's CPU through
 * `request()`). Of a body past the cap the first bytes are kept and the
 * rest is read and dropped, so that the connection serves the next
 * request; one longer than DRAIN_BYTES past the cap, or slower than
 * DRAIN_MS, is cut there and its connection closed.
 */
class Exchange implements Dispatcher.DispatchHandler {
  readonly response: Promise<Response>;
  #resolve!: (response: Response) => void;
  #reject!: (error: Error) => void;
  #controller: Dispatcher.DispatchController | undefined;
  /** An abort asked for before undici handed over the controller. */
  #abortReason: Error | undefined;
  #statusCode = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] = [];
  #size = 0;
  #settled = false;
  #drainTimer: NodeJS.Timeout | undefined;

  constructor(private readonly maxBytes: number) {
    this.response = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  abort(reason: Error): void {
    if (this.#settled) return;
    if (this.#controller) this.#controller.abort(reason);
    else this.#abortReason = reason;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#abortReason) controller.abort(this.#abortReason);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // 1xx informational answers come first; only the final one counts.
    if (statusCode < 200) return;
    this.#statusCode = statusCode;
    this.#headers = headers;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    const before = this.#size;
    this.#size += chunk.byteLength;
    if (before < this.maxBytes) this.#chunks.push(chunk);
    if (this.#size > this.maxBytes + DRAIN_BYTES) {
      this.#cut(controller);
      return;
    }
    // Past the cap the rest is read and dropped, for DRAIN_MS at most.
    if (before < this.maxBytes && this.#size >= this.maxBytes) this.#drainTimer = setTimeout(() => this.#cut(controller), DRAIN_MS);
  }

  /** The attempt ends with the first bytes; the rest of the answer is dropped with its connection. */
  #cut(controller: Dispatcher.DispatchController): void {
    clearTimeout(this.#drainTimer);
    this.#finish();
    controller.abort(new Error("response body over the cap"));
  }

  onResponseEnd(): void {
    clearTimeout(this.#drainTimer);
    this.#finish();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    clearTimeout(this.#drainTimer);
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(error);
  }

  #finish(): void {
    if (this.#settled) return;
    this.#settled = true;
    const body = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks);
    this.#resolve({
      statusCode: this.#statusCode,
      headers: this.#headers,
      body: body.subarray(0, this.maxBytes).toString("utf8"),
    });
  }
}

const TIMEOUT_PREFIX = "timeout: ";
const REFUSED_PREFIX = "refused: ";

/** What kind of failure an attempt's recorded `error` (as `send` describes it) was, where it is one metrics single out. */
export function failureKind(error: string | undefined): "timeout" | "forbidden_target" | undefined {
  if (error?.startsWith(TIMEOUT_PREFIX)) return "timeout";
  if (error?.startsWith(REFUSED_PREFIX)) return "forbidden_target";
  return undefined;
}

function describeFailure(error: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `${TIMEOUT_PREFIX}no answer within ${timeoutMs} ms`;
  if (error instanceof ForbiddenTargetError) return `${REFUSED_PREFIX}${error.message}`;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const code = (error as { code?: string }).code ?? cause?.code;
  if (error instanceof undiciErrors.UndiciError || code) {
    const message = (error as Error).message;
    return code && !message.includes(code) ? `${code}: ${message}` : message;
  }
  return error instanceof Error ? error.message : String(error);
}
