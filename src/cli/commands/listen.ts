import { Code, ConnectError } from "@connectrpc/connect";
import type { Command } from "commander";
import { type DeliveryActivity, DeliveryActivityKind, DeliveryService } from "../../gen/webhooks/v1/delivery_service_pb.js";
import { SubscriptionService } from "../../gen/webhooks/v1/subscription_service_pb.js";
import { UsageError } from "../connection.js";
import type { Output } from "../output.js";
import type { Context } from "./context.js";

/** How much of the local answer is reported back (the delivery log keeps MAX_RESPONSE_BYTES of it). */
const MAX_ANSWER_CHARS = 4096;
const FORWARD_TIMEOUT_MS = 10_000;

interface Relay {
  id: string;
  event: string;
  signatureKey: string;
  /** Created by this listen, deleted when it stops. */
  temporary: boolean;
}

interface Forwarded {
  jobId: string;
  attempt: number;
  event: string;
  statusCode?: number;
  error?: string;
  durationMs: number;
}

/** POSTs one relay request to the local receiver, exactly as the delivery would arrive. */
async function forward(url: string, request: DeliveryActivity): Promise<Forwarded & { responseBody?: string }> {
  const started = performance.now();
  const done = { jobId: request.jobId, attempt: request.attempt, event: request.event };
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: request.headers,
      body: request.body,
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
    });
    const responseBody = (await response.text()).slice(0, MAX_ANSWER_CHARS);
    return { ...done, statusCode: response.status, responseBody, durationMs: Math.round(performance.now() - started) };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const reason = cause?.code ?? cause?.message ?? (error as Error).message;
    return { ...done, error: `${reason} (forwarding to ${url})`, durationMs: Math.round(performance.now() - started) };
  }
}

function describe(out: Output, forwarded: Forwarded): string {
  const answer = forwarded.error
    ? out.style("red", forwarded.error)
    : out.style(forwarded.statusCode !== undefined && forwarded.statusCode < 300 ? "green" : "red", String(forwarded.statusCode));
  return `${forwarded.event.padEnd(18)} ${forwarded.jobId} attempt ${forwarded.attempt} → ${answer} in ${forwarded.durationMs} ms`;
}

/** `listen`: deliveries of relay subscriptions, forwarded to a local URL from behind NAT. */
export function addListenCommand(program: Command, context: Context, interrupt: AbortSignal): void {
  program
    .command("listen")
    .description("forwards deliveries to a local URL: registers a temporary relay subscription, removed on exit")
    .requiredOption("--forward-to <url>", "the local receiver, e.g. http://localhost:3000/hooks")
    .option("--events <names>", "comma-separated event types, e.g. Order.Created,Order.Shipped")
    .option("--subscription <id>", "an existing relay subscription instead (kept on exit)")
    .action(async (options: { forwardTo: string; events?: string; subscription?: string }) => {
      const { out, connection } = context();
      try {
        new URL(options.forwardTo);
      } catch {
        throw new UsageError(`--forward-to must be a URL, got ${JSON.stringify(options.forwardTo)}`);
      }
      const events = (options.events ?? "")
        .split(",")
        .map((name) => name.trim())
        .filter(Boolean);
      if ((events.length === 0) === !options.subscription) throw new UsageError("give --events or --subscription (one of them)");
      const subscriptions = connection.client(SubscriptionService, "apiKey");
      const deliveries = connection.client(DeliveryService, "apiKey");

      const relays: Relay[] = [];
      const removeTemporary = async () => {
        for (const relay of relays.filter((each) => each.temporary)) {
          await subscriptions.deleteSubscription({ id: relay.id }).catch(() => {});
        }
      };
      try {
        if (options.subscription) {
          const { subscription } = await subscriptions.getSubscription({ id: options.subscription });
          if (!subscription?.url.startsWith("relay:")) throw new UsageError(`${options.subscription} is not a relay subscription`);
          relays.push({ id: subscription.id, event: subscription.event, signatureKey: subscription.signatureKey, temporary: false });
        }
        for (const event of events) {
          const { subscription } = await subscriptions.createSubscription({ event, url: "", relay: true, description: "webhooks listen" });
          if (!subscription) throw new Error("the service answered without a subscription");
          relays.push({ id: subscription.id, event, signatureKey: subscription.signatureKey, temporary: true });
        }

        const stop = new AbortController();
        const onInterrupt = () => stop.abort();
        interrupt.addEventListener("abort", onInterrupt, { once: true });
        if (interrupt.aborted) stop.abort();
        const stream = deliveries.watchDeliveries(
          { relaySubscriptionIds: relays.map((relay) => relay.id), ...(relays.length === 1 ? { subscriptionId: relays[0]?.id } : {}) },
          { signal: stop.signal },
        );
        const inFlight = new Set<Promise<void>>();
        let announced = false;
        try {
          for await (const { activity } of stream) {
            if (!activity) {
              // The first message: the watch is in place, so nothing sent from now on is missed.
              if (!announced) announce(out, relays, options.forwardTo);
              announced = true;
              continue;
            }
            if (activity.kind !== DeliveryActivityKind.RELAY_REQUEST) continue;
            const task = forward(options.forwardTo, activity).then(async (forwarded) => {
              const { accepted } = await deliveries.reportRelayResult({
                subscriptionId: activity.subscriptionId,
                jobId: forwarded.jobId,
                attempt: forwarded.attempt,
                statusCode: forwarded.statusCode ?? 0,
                responseBody: forwarded.responseBody ?? "",
                error: forwarded.error ?? "",
                durationMs: forwarded.durationMs,
              });
              if (out.json) out.line(JSON.stringify({ ...forwarded, responseBody: undefined, recorded: accepted }));
              else out.line(describe(out, forwarded) + (accepted ? "" : out.style("yellow", " (too late: not recorded)")));
            });
            inFlight.add(task);
            void task
              .catch((error: unknown) => out.note(`error: reporting the answer: ${(error as Error).message}`))
              .finally(() => inFlight.delete(task));
          }
        } catch (error) {
          if (!(stop.signal.aborted && ConnectError.from(error).code === Code.Canceled)) throw error;
        } finally {
          interrupt.removeEventListener("abort", onInterrupt);
          await Promise.allSettled(inFlight);
        }
      } finally {
        await removeTemporary();
      }
      if (!out.json) out.note(relays.some((relay) => relay.temporary) ? "stopped; temporary relay subscriptions removed" : "stopped");
    });
}

/** Once the watch is in place: the relays and the keys that verify their X-Signature. */
function announce(out: Output, relays: readonly Relay[], forwardTo: string): void {
  if (out.json) {
    out.line(
      JSON.stringify({
        forwardTo,
        subscriptions: relays.map(({ id, event, signatureKey }) => ({ id, event, url: `relay:${id}`, signatureKey })),
      }),
    );
    return;
  }
  out.line(`forwarding to ${forwardTo} (Ctrl-C to stop)`);
  for (const relay of relays) {
    out.line();
    out.line(`${relay.event}: relay subscription ${relay.id} (url relay:${relay.id}); X-Signature verifies with:`);
    out.line(relay.signatureKey.trimEnd());
  }
  out.line();
}
