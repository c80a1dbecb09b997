import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import {
  DeliveryService,
  ListNotificationsResponseSchema,
  type Notification,
  NotificationSchema,
  NotificationStatus,
  RecoverFailedNotificationsResponseSchema,
  RedeliverNotificationResponseSchema,
} from "../../gen/webhooks/v1/delivery_service_pb.js";
import { UsageError } from "../connection.js";
import { type Output, time } from "../output.js";
import type { Context } from "./context.js";

const STATUSES: Record<string, NotificationStatus> = {
  pending: NotificationStatus.PENDING,
  delivered: NotificationStatus.DELIVERED,
  failed: NotificationStatus.FAILED,
};

function statusText(out: Output, status: NotificationStatus): string {
  const name = NotificationStatus[status]?.toLowerCase() ?? "unknown";
  return status === NotificationStatus.DELIVERED
    ? out.style("green", name)
    : status === NotificationStatus.FAILED
      ? out.style("red", name)
      : name;
}

export function parseTime(text: string, option: string): Date {
  const date = new Date(text);
  if (Number.isNaN(date.getTime()))
    throw new UsageError(`${option} must be a time such as 2026-11-20T00:00:00Z, got ${JSON.stringify(text)}`);
  return date;
}

function printNotification(out: Output, notification: Notification): void {
  out.fields([
    ["job", notification.id],
    ["subscription", notification.subscriptionId],
    ["event", notification.event],
    ["status", statusText(out, notification.status)],
    ["attempts", String(notification.attemptCount)],
    ["created", time(notification.createdAt)],
    ...(notification.redeliveryOf ? ([["redelivery of", notification.redeliveryOf]] as const) : []),
    ["body", notification.body],
  ]);
  if (notification.attempts.length === 0) return;
  out.line();
  out.table(
    ["ATTEMPT", "STARTED", "MS", "ANSWER"],
    notification.attempts.map((attempt) => [
      String(attempt.attempt),
      time(attempt.startedAt),
      String(attempt.durationMs),
      attempt.error
        ? out.style("red", attempt.error)
        : `${out.style(attempt.succeeded ? "green" : "red", String(attempt.statusCode))} ${attempt.responseBody.replace(/\s+/g, " ").slice(0, 80)}`,
    ]),
  );
}

/** The delivery log: `deliveries list|get`, `redeliver`, `recover`. */
export function addDeliveryCommands(program: Command, context: Context): void {
  const deliveries = program.command("deliveries").description("a subscription's delivery log");

  deliveries
    .command("list <subscriptionId>")
    .description("its notifications, newest first")
    .option("--status <status>", "pending, delivered or failed")
    .option("--event <event>", "only notifications of this event, e.g. Order.Shipped")
    .option("--since <time>", "only notifications created at or after this time, e.g. 2026-11-20T00:00:00Z")
    .option("--until <time>", "only notifications created before this time")
    .option("--limit <n>", "how many", "20")
    .action(async (subscriptionId: string, options: { status?: string; event?: string; since?: string; until?: string; limit: string }) => {
      const { out, connection } = context();
      const status = options.status === undefined ? NotificationStatus.UNSPECIFIED : STATUSES[options.status.toLowerCase()];
      if (status === undefined)
        throw new UsageError(`--status must be pending, delivered or failed, got ${JSON.stringify(options.status)}`);
      const limit = Number(options.limit);
      if (!Number.isInteger(limit) || limit < 1)
        throw new UsageError(`--limit must be a positive integer, got ${JSON.stringify(options.limit)}`);
      const filters = {
        subscriptionId,
        status,
        event: options.event ?? "",
        ...(options.since === undefined ? {} : { since: timestampFromDate(parseTime(options.since, "--since")) }),
        ...(options.until === undefined ? {} : { until: timestampFromDate(parseTime(options.until, "--until")) }),
      };
      const client = connection.client(DeliveryService, "apiKey");
      const found: Notification[] = [];
      let pageToken = "";
      do {
        const page = await client.listNotifications({ ...filters, pageSize: Math.min(100, limit - found.length), pageToken });
        found.push(...page.notifications);
        pageToken = page.nextPageToken;
      } while (pageToken && found.length < limit);
      if (out.json)
        return out.message(
          ListNotificationsResponseSchema,
          create(ListNotificationsResponseSchema, { notifications: found, nextPageToken: pageToken }),
        );
      out.table(
        ["JOB", "EVENT", "STATUS", "ATTEMPTS", "CREATED"],
        found.map((n) => [n.id, n.event, statusText(out, n.status), String(n.attemptCount), time(n.createdAt)]),
      );
    });

  deliveries
    .command("get <subscriptionId> <jobId>")
    .description("one notification: its body and every attempt, with what the receiver answered")
    .action(async (subscriptionId: string, id: string) => {
      const { out, connection } = context();
      const { notification } = await connection.client(DeliveryService, "apiKey").getNotification({ subscriptionId, id });
      if (!notification) throw new Error("the service answered without a notification");
      if (out.json) return out.message(NotificationSchema, notification);
      printNotification(out, notification);
    });

  program
    .command("redeliver <subscriptionId> <jobId>")
    .description("sends a notification again as a new job (same body, new X-JobId)")
    .action(async (subscriptionId: string, id: string) => {
      const { out, connection } = context();
      const answer = await connection.client(DeliveryService, "apiKey").redeliverNotification({ subscriptionId, id });
      if (out.json) return out.message(RedeliverNotificationResponseSchema, answer);
      out.line(`redelivering ${id} as job ${answer.jobId}`);
    });

  program
    .command("recover <subscriptionId>")
    .description("redelivers every failed notification of the subscription created since a time")
    .requiredOption("--since <time>", "e.g. 2026-11-20T00:00:00Z")
    .action(async (subscriptionId: string, options: { since: string }) => {
      const { out, connection } = context();
      const since = parseTime(options.since, "--since");
      const client = connection.client(DeliveryService, "apiKey");
      // Listed first and redelivered one by one, so that a person sees how far it got.
      const failed: Notification[] = [];
      let pageToken = "";
      do {
        const page = await client.listNotifications({
          subscriptionId,
          status: NotificationStatus.FAILED,
          since: timestampFromDate(since),
          pageSize: 100,
          pageToken,
        });
        failed.push(...page.notifications);
        pageToken = page.nextPageToken;
      } while (pageToken);
      const jobIds: string[] = [];
      for (const notification of failed.reverse()) {
        jobIds.push((await client.redeliverNotification({ subscriptionId, id: notification.id })).jobId);
        out.status(progressBar(jobIds.length, failed.length));
      }
      if (out.terminal && failed.length > 0) out.note("");
      if (out.json)
        return out.message(RecoverFailedNotificationsResponseSchema, create(RecoverFailedNotificationsResponseSchema, { jobIds }));
      out.line(`redelivered ${jobIds.length} failed notification${jobIds.length === 1 ? "" : "s"} created since ${since.toISOString()}`);
      for (const jobId of jobIds) out.line(`  ${jobId}`);
    });
}

function progressBar(done: number, total: number, width = 30): string {
  const filled = Math.round((done / total) * width);
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total}`;
}
