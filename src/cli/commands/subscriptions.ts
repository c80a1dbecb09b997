import { create, type JsonObject } from "@bufbuild/protobuf";
import { type Command, InvalidArgumentError } from "commander";
import { type Subscription, SubscriptionSchema } from "../../gen/webhooks/v1/subscription_pb.js";
import {
  ListEventsResponseSchema,
  ListSubscriptionsResponseSchema,
  SubscriptionService,
  TriggerSampleEventNotificationResponseSchema,
} from "../../gen/webhooks/v1/subscription_service_pb.js";
import { type Output, time } from "../output.js";
import type { Context } from "./context.js";

/** A whole number of zero or more, for --rate-limit. */
function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("a whole number of zero or more, e.g. 5");
  return Number(value);
}

/** `Name: value`, as curl's -H takes it, collected into one map for repeated --header. */
function header(text: string, collected: Record<string, string> = {}): Record<string, string> {
  const colon = text.indexOf(":");
  if (colon <= 0) throw new InvalidArgumentError('"Name: value", e.g. "X-Api-Key: s3cr3t"');
  return { ...collected, [text.slice(0, colon).trim()]: text.slice(colon + 1).trimStart() };
}

/** A JSON object, for --filter. */
function jsonObject(text: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {}
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`a JSON object, e.g. '{"Currency": {"$in": ["EUR", "CHF"]}}'`);
  }
  return value as JsonObject;
}

function printSubscription(out: Output, subscription: Subscription, signatureKey = false): void {
  out.fields([
    ["id", subscription.id],
    ["event", subscription.event],
    ["url", subscription.url],
    [
      "enabled",
      subscription.enabled
        ? out.style("green", "yes")
        : out.style("red", `no${subscription.disabledReason ? ` (${subscription.disabledReason})` : ""}`),
    ],
    ["description", subscription.description],
    ...(subscription.rateLimitPerSecond ? ([["rate limit", `${subscription.rateLimitPerSecond}/s`]] as const) : []),
    ...Object.entries(subscription.headers).map(([name, value]) => ["header", `${name}: ${value}`] as const),
    ...(subscription.filter ? ([["filter", JSON.stringify(subscription.filter)]] as const) : []),
    ["created", time(subscription.createdAt)],
    ...(subscription.failingSince ? ([["failing since", time(subscription.failingSince)]] as const) : []),
    ...(subscription.rotationDeadline ? ([["rotation deadline", time(subscription.rotationDeadline)]] as const) : []),
  ]);
  if (signatureKey) {
    out.line();
    out.line(subscription.signatureKey.trimEnd());
    if (subscription.nextSignatureKey) {
      out.line(out.style("dim", "next signature key:"));
      out.line(subscription.nextSignatureKey.trimEnd());
    }
  }
}

/** `events`, `subscriptions …` and `trigger-sample`: the subscriber's side, with the API key. */
export function addSubscriptionCommands(program: Command, context: Context): void {
  program
    .command("events")
    .description("the event types you can subscribe to")
    .action(async () => {
      const { out, connection } = context();
      const answer = await connection.client(SubscriptionService, "apiKey").listEvents({});
      if (out.json) return out.message(ListEventsResponseSchema, answer);
      out.table(
        ["EVENT", "DESCRIPTION"],
        answer.events.map((event) => [event.name, event.description]),
      );
    });

  const subscriptions = program.command("subscriptions").description("your subscriptions");

  subscriptions
    .command("list")
    .description("every subscription, oldest first")
    .action(async () => {
      const { out, connection } = context();
      const client = connection.client(SubscriptionService, "apiKey");
      const all: Subscription[] = [];
      let pageToken = "";
      do {
        const page = await client.listSubscriptions({ pageSize: 100, pageToken });
        all.push(...page.subscriptions);
        pageToken = page.nextPageToken;
      } while (pageToken);
      if (out.json) return out.message(ListSubscriptionsResponseSchema, create(ListSubscriptionsResponseSchema, { subscriptions: all }));
      out.table(
        ["ID", "EVENT", "ENABLED", "URL"],
        all.map((s) => [s.id, s.event, s.enabled ? "yes" : out.style("red", "no"), s.url]),
      );
    });

  subscriptions
    .command("get <id>")
    .description("one subscription, with its signature key")
    .action(async (id: string) => {
      const { out, connection } = context();
      const { subscription } = await connection.client(SubscriptionService, "apiKey").getSubscription({ id });
      if (!subscription) throw new Error("the service answered without a subscription");
      if (out.json) return out.message(SubscriptionSchema, subscription);
      printSubscription(out, subscription, true);
    });

  subscriptions
    .command("create")
    .description("subscribes a URL to an event; prints the key that verifies X-Signature")
    .requiredOption("--event <name>", "event type, e.g. Order.Created")
    .requiredOption("--url <url>", "the HTTPS endpoint receiving the notifications")
    .option("--description <text>", "free text for your own bookkeeping", "")
    .option("--rate-limit <n>", "most deliveries per second (0: no limit)", wholeNumber, 0)
    .option("--header <name: value>", "a header sent with every delivery (repeat for more); shown only now", header)
    .option("--filter <json>", "deliver only notifications whose payload matches this JSON filter", jsonObject)
    .action(
      async (options: {
        event: string;
        url: string;
        description: string;
        rateLimit: number;
        header?: Record<string, string>;
        filter?: JsonObject;
      }) => {
        const { out, connection } = context();
        const { rateLimit, header: headers, ...rest } = options;
        const { subscription } = await connection
          .client(SubscriptionService, "apiKey")
          .createSubscription({ ...rest, rateLimitPerSecond: rateLimit, headers: headers ?? {} });
        if (!subscription) throw new Error("the service answered without a subscription");
        if (out.json) return out.message(SubscriptionSchema, subscription);
        printSubscription(out, subscription, true);
      },
    );

  subscriptions
    .command("update <id>")
    .description("changes the URL, the description, the rate limit, the headers, the filter, or turns it on or off")
    .option("--url <url>")
    .option("--description <text>")
    .option("--rate-limit <n>", "most deliveries per second (0: no limit)", wholeNumber)
    .option("--header <name: value>", "replaces all headers with these (repeat for more)", header)
    .option("--clear-headers", "removes all headers")
    .option("--filter <json>", "replaces the filter ('{}' removes it)", jsonObject)
    .option("--enable", "turn deliveries on (clears a failure streak)")
    .option("--disable", "turn deliveries off")
    .action(
      async (
        id: string,
        options: {
          url?: string;
          description?: string;
          rateLimit?: number;
          header?: Record<string, string>;
          clearHeaders?: boolean;
          filter?: JsonObject;
          enable?: boolean;
          disable?: boolean;
        },
      ) => {
        const { out, connection } = context();
        if (options.enable && options.disable) throw new Error("--enable or --disable, not both");
        if (options.header && options.clearHeaders) throw new Error("--header or --clear-headers, not both");
        const enabled = options.enable ? true : options.disable ? false : undefined;
        const headers = options.clearHeaders ? {} : options.header;
        const { subscription } = await connection.client(SubscriptionService, "apiKey").updateSubscription({
          id,
          ...(options.url === undefined ? {} : { url: options.url }),
          ...(options.description === undefined ? {} : { description: options.description }),
          ...(options.rateLimit === undefined ? {} : { rateLimitPerSecond: options.rateLimit }),
          ...(headers === undefined ? {} : { headers }),
          ...(options.filter === undefined ? {} : { filter: options.filter }),
          ...(enabled === undefined ? {} : { enabled }),
        });
        if (!subscription) throw new Error("the service answered without a subscription");
        if (out.json) return out.message(SubscriptionSchema, subscription);
        printSubscription(out, subscription);
      },
    );

  subscriptions
    .command("delete <id>")
    .description("deletes it; its delivery log is kept")
    .action(async (id: string) => {
      const { out, connection } = context();
      await connection.client(SubscriptionService, "apiKey").deleteSubscription({ id });
      if (out.json) return out.line(JSON.stringify({ deleted: id }));
      out.line(`deleted ${id}`);
    });

  subscriptions
    .command("rotate-key <id>")
    .description("starts a signature key rotation: prints both keys; the current one keeps signing until confirmed")
    .action(async (id: string) => {
      const { out, connection } = context();
      const { subscription } = await connection.client(SubscriptionService, "apiKey").rotateSignatureKey({ id });
      if (!subscription) throw new Error("the service answered without a subscription");
      if (out.json) return out.message(SubscriptionSchema, subscription);
      printSubscription(out, subscription, true);
    });

  subscriptions
    .command("confirm-rotation <id>")
    .description("the next key signs from now on")
    .action(async (id: string) => {
      const { out, connection } = context();
      const { subscription } = await connection.client(SubscriptionService, "apiKey").confirmSignatureKeyRotation({ id });
      if (!subscription) throw new Error("the service answered without a subscription");
      if (out.json) return out.message(SubscriptionSchema, subscription);
      printSubscription(out, subscription, true);
    });

  program
    .command("trigger-sample")
    .description("sends the event's sample payload to a URL you subscribed to that event, signed with that subscription's key")
    .requiredOption("--event <name>", "event type")
    .requiredOption("--url <url>", "the URL of one of your enabled subscriptions to that event (relay:<id> for a relay)")
    .action(async (options: { event: string; url: string }) => {
      const { out, connection } = context();
      const answer = await connection.client(SubscriptionService, "apiKey").triggerSampleEventNotification(options);
      if (out.json) return out.message(TriggerSampleEventNotificationResponseSchema, answer);
      out.line(`sent: job ${answer.jobId}`);
    });
}
