import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { Command } from "commander";
import { type DeliveryActivity, DeliveryActivityKind, DeliveryService } from "../../gen/webhooks/v1/delivery_service_pb.js";
import { SubscriptionService } from "../../gen/webhooks/v1/subscription_service_pb.js";
import { UsageError } from "../connection.js";
import type { Output } from "../output.js";
import type { Context } from "./context.js";
import { serviceWentAway, waitToReconnect, whyEnded } from "./reconnect.js";

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
      /** Deletes the temporary relays; each one that could not be deleted, with why. */
      const removeTemporary = async (): Promise<string[]> => {
        const failures: string[] = [];
        for (const relay of relays.filter((each) => each.temporary)) {
          await subscriptions.deleteSubscription({ id: relay.id }).catch((error: unknown) => {
            // Gone already (the service let its lease lapse): nothing left to remove.
            if (ConnectError.from(error).code !== Code.NotFound) failures.push(`${relay.id} (${ConnectError.from(error).rawMessage})`);
          });
        }
        return failures;
      };
      let failures: string[] = [];
      try {
        if (options.subscription) {
          const { subscription } = await subscriptions.getSubscription({ id: options.subscription });
          if (!subscription?.url.startsWith("relay:")) throw new UsageError(`${options.subscription} is not a relay subscription`);
          relays.push({ id: subscription.id, event: subscription.event, signatureKey: subscription.signatureKey, temporary: false });
        }
        for (const event of events) {
          const { subscription } = await subscriptions.createSubscription({
            event,
            url: "",
            relay: true,
            temporary: true,
            description: "webhooks listen",
          });
          if (!subscription) throw new Error("the service answered without a subscription");
          relays.push({ id: subscription.id, event, signatureKey: subscription.signatureKey, temporary: true });
        }
        await forwardUntilInterrupted(out, interrupt, relays, options.forwardTo, deliveries);
      } finally {
        failures = await removeTemporary();
      }
      if (failures.length > 0) {
        const [them, its] = failures.length > 1 ? ["them", "their leases end"] : ["it", "its lease ends"];
        throw new Error(
          `could not remove the temporary relay subscription${failures.length > 1 ? "s" : ""} ${failures.join(", ")}; ` +
            `the service deletes ${them} by itself once ${its}, about a minute after listen stopped (nothing is delivered to ${them} then)`,
        );
      }
      if (!out.json) out.note(relays.some((relay) => relay.temporary) ? "stopped; temporary relay subscriptions removed" : "stopped");
    });
}

/**
 * Watches the relays and forwards each relay request until Ctrl-C. When the
 * service goes away (a restart), the watch is opened again: pending attempts
 * are retried by the service, so nothing is lost meanwhile.
 */
async function forwardUntilInterrupted(
  out: Output,
  interrupt: AbortSignal,
  relays: readonly Relay[],
  forwardTo: string,
  deliveries: Client<typeof DeliveryService>,
): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  let announced = false;
  let away = false;
  try {
    for (;;) {
      const stream = deliveries.watchDeliveries(
        { relaySubscriptionIds: relays.map((relay) => relay.id), ...(relays.length === 1 ? { subscriptionId: relays[0]?.id } : {}) },
        { signal: interrupt },
      );
      let ended: unknown;
      try {
        for await (const { activity } of stream) {
          if (!activity) {
            // The first message: the watch is in place, so nothing sent from now on is missed.
            if (!announced) announce(out, relays, forwardTo);
            else if (away) out.note("forwarding again");
            announced = true;
            away = false;
            continue;
          }
          if (activity.kind !== DeliveryActivityKind.RELAY_REQUEST) continue;
          const task = forward(forwardTo, activity).then(async (forwarded) => {
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
        ended = error;
      }
      if (interrupt.aborted) return;
      if (announced && ended !== undefined && ConnectError.from(ended).code === Code.NotFound)
        throw new Error(
          `${ConnectError.from(ended).rawMessage}: the service deleted it when its lease ended, while listen could not reach it; start listen again`,
        );
      if (!announced || !serviceWentAway(ended)) throw ended ?? new Error("the service closed the stream before it was in place");
      if (!away) out.note(out.style("yellow", `${whyEnded(ended)}; reconnecting (Ctrl-C to stop)`));
      away = true;
      if (!(await waitToReconnect(interrupt))) return;
    }
  } finally {
    await Promise.allSettled(inFlight);
  }
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
