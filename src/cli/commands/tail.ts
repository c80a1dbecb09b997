import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Command } from "commander";
import {
  type DeliveryActivity,
  DeliveryActivityKind,
  DeliveryActivitySchema,
  DeliveryOutcome,
  DeliveryService,
} from "../../gen/webhooks/v1/delivery_service_pb.js";
import { EventService } from "../../gen/webhooks/v1/event_service_pb.js";
import { UsageError } from "../connection.js";
import type { Output } from "../output.js";
import type { Context } from "./context.js";
import { parseTime } from "./deliveries.js";
import { serviceWentAway, waitToReconnect, whyEnded } from "./reconnect.js";

/** One activity as a line: time, event, job, what happened. */
export function describeActivity(out: Output, activity: DeliveryActivity): string {
  const at = activity.occurredAt ? timestampDate(activity.occurredAt).toISOString().slice(11, 23) : "";
  const subject = `${out.style("dim", at)}  ${activity.event.padEnd(18)} ${activity.jobId || activity.subscriptionId}`;
  switch (activity.kind) {
    case DeliveryActivityKind.ACCEPTED:
      return `${subject}  accepted`;
    case DeliveryActivityKind.ATTEMPT_STARTED:
      return `${subject}  attempt ${activity.attempt} →`;
    case DeliveryActivityKind.ATTEMPT_FINISHED: {
      const answer = activity.error ? activity.error : `${activity.statusCode}`;
      return `${subject}  attempt ${activity.attempt} ${out.style(activity.succeeded ? "green" : "red", answer)} in ${activity.durationMs} ms`;
    }
    case DeliveryActivityKind.DELIVERED:
      return `${subject}  ${out.style("green", "delivered")}`;
    case DeliveryActivityKind.FAILED:
      return `${subject}  ${out.style("red", "failed for good")}`;
    case DeliveryActivityKind.SUBSCRIPTION_DISABLED:
      return `${subject}  ${out.style("red", `subscription disabled: ${activity.reason}`)}`;
    default:
      return `${subject}  ${DeliveryActivityKind[activity.kind] ?? activity.kind}`;
  }
}

interface TailOptions {
  subscription?: string;
  event?: string;
  failed?: boolean;
  since?: string;
  client?: string;
}

/** `tail`: the live delivery stream, pretty-printed (or one JSON activity per line). */
export function addTailCommand(program: Command, context: Context, interrupt: AbortSignal): void {
  program
    .command("tail")
    .description("deliveries as they happen; with the admin token (and no API key), every client's")
    .option("--subscription <id>", "only this subscription")
    .option("--event <name>", "only this event type")
    .option("--failed", "only failed attempts, failures and disabled subscriptions")
    .option("--since <time>", "first replay the delivery log from this time")
    .option("--client <id>", "admin: only this client")
    .action(async (options: TailOptions) => {
      const { out, connection } = context();
      const asAdmin = connection.available === "adminToken";
      if (options.client && !asAdmin) throw new UsageError("--client needs the admin token (and no API key)");
      let since = options.since ? parseTime(options.since, "--since") : undefined;
      // Once the watch has been in place, the service going away (a restart) is waited out, and the watch
      // opened again from the last activity seen: nothing is missed, and each outage is said once.
      let watched = false;
      let away = false;
      for (;;) {
        const request = {
          subscriptionId: options.subscription ?? "",
          event: options.event ?? "",
          outcome: options.failed ? DeliveryOutcome.FAILED : DeliveryOutcome.UNSPECIFIED,
          ...(since ? { since: timestampFromDate(since) } : {}),
        };
        const stream = asAdmin
          ? connection
              .client(EventService, "adminToken")
              .watchAllDeliveries({ ...request, clientId: options.client ?? "" }, { signal: interrupt })
          : connection.client(DeliveryService, "apiKey").watchDeliveries(request, { signal: interrupt });
        let ended: unknown;
        try {
          for await (const { activity } of stream) {
            if (!activity) {
              // On stderr in both modes: a script reading stdout can wait for it to know the watch is in place.
              if (!watched) out.note(out.style("dim", `watching ${connection.url} (Ctrl-C to stop)`));
              else if (away) out.note(out.style("dim", `watching again${since ? ` from ${since.toISOString()}` : ""}`));
              watched = true;
              away = false;
              continue;
            }
            if (activity.occurredAt) since = timestampDate(activity.occurredAt);
            if (out.json) out.message(DeliveryActivitySchema, activity, true);
            else out.line(describeActivity(out, activity));
          }
        } catch (error) {
          ended = error;
        }
        if (interrupt.aborted) return;
        // Fell behind: pick up again from the last activity seen; the replay fills the gap.
        if (
          ended instanceof ConnectError &&
          ended.code === Code.ResourceExhausted &&
          ended.rawMessage.startsWith("watcher cut off") &&
          since
        ) {
          out.note(out.style("yellow", `${ended.rawMessage}; reconnecting from ${since.toISOString()}`));
          continue;
        }
        if (!watched || !serviceWentAway(ended)) {
          if (ended === undefined) return;
          throw ended;
        }
        if (!away) out.note(out.style("yellow", `${whyEnded(ended)}; reconnecting (Ctrl-C to stop)`));
        away = true;
        // From the moment it went away, when no activity was seen: what happens meanwhile is replayed.
        since ??= new Date();
        if (!(await waitToReconnect(interrupt))) return;
      }
    });
}
