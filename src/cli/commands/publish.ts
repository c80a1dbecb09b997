import { open } from "node:fs/promises";
import { createInterface } from "node:readline";
import { fromJsonString } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import type { Command } from "commander";
import {
  EventService,
  type PublishEventRequest,
  PublishEventRequestSchema,
  PublishEventResponseSchema,
  type PublishEventsResponse,
} from "../../gen/webhooks/v1/event_service_pb.js";
import { UsageError } from "../connection.js";
import type { Output } from "../output.js";
import { readJsonObject } from "./admin.js";
import type { Context } from "./context.js";

/** The most events the service takes in one PublishEvents call. */
const BATCH_LIMIT = 500;

interface PublishOptions {
  client?: string;
  payload: string;
  idempotencyKey?: string;
  ndjson?: string;
  batchSize: string;
}

/** An event read from an NDJSON line, with its line number. */
interface Line {
  number: number;
  request: PublishEventRequest;
}

/** `webhooks publish`: one event, or many from NDJSON in PublishEvents batches. */
export function addPublishCommand(program: Command, context: Context, stdin: NodeJS.ReadableStream): void {
  program
    .command("publish [event]")
    .description("admin: publishes an event for a client, its payload from a file or stdin; or, with --ndjson, many events in batches")
    .option("--client <id>", "the client whose subscriptions receive it (with --ndjson: for lines without a clientId)")
    .option("--payload <file>", "the event's fields, a JSON object ('-' for stdin)", "-")
    .option("--idempotency-key <key>", "publishing the same key again creates nothing")
    .option(
      "--ndjson <file>",
      "events, one JSON object per line as PublishEvent takes it ({clientId, event, payload, idempotencyKey}); '-' for stdin",
    )
    .option("--batch-size <n>", `events per call with --ndjson, 1 to ${BATCH_LIMIT}`, String(BATCH_LIMIT))
    .action(async (event: string | undefined, options: PublishOptions) => {
      const { out, connection } = context();
      const client = connection.client(EventService, "adminToken");
      if (options.ndjson !== undefined) {
        if (options.idempotencyKey !== undefined)
          throw new UsageError("--idempotency-key is for one event: with --ndjson, give each line its own");
        const lines = await readLines(options.ndjson, stdin);
        const defaults = { clientId: options.client ?? "", event: event ?? "" };
        return publishLines(lines, defaults, batchSizeOf(options.batchSize), out, (events) => client.publishEvents({ events }));
      }
      if (event === undefined || options.client === undefined)
        throw new UsageError("publish needs an <event> and --client, or --ndjson <file> with one event per line");
      const payload = await readJsonObject(options.payload, "the payload", stdin);
      const answer = await client.publishEvent({ clientId: options.client, event, payload, idempotencyKey: options.idempotencyKey ?? "" });
      if (out.json) return out.message(PublishEventResponseSchema, answer);
      out.line(`${answer.duplicate ? "already published" : "published"}: ${plural(answer.jobIds.length, "job")}`);
      for (const jobId of answer.jobIds) out.line(`  ${jobId}`);
    });
}

function batchSizeOf(text: string): number {
  const size = Number(text);
  if (!Number.isInteger(size) || size < 1 || size > BATCH_LIMIT)
    throw new UsageError(`--batch-size must be 1 to ${BATCH_LIMIT}, not ${text}`);
  return size;
}

async function readLines(source: string, stdin: NodeJS.ReadableStream): Promise<AsyncIterable<string>> {
  if (source === "-") return createInterface({ input: stdin, crlfDelay: Number.POSITIVE_INFINITY });
  const file = await open(source).catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`--ndjson: cannot read ${source} (${error.code ?? error.message})`);
  });
  return file.readLines();
}

/**
 * Sends the lines' events in batches, each batch one call (accepted whole or
 * not at all), and stops at the first refused: the error names its line,
 * and says which lines went in before it. With --json, one answer per event.
 */
async function publishLines(
  lines: AsyncIterable<string>,
  defaults: { clientId: string; event: string },
  batchSize: number,
  out: Output,
  send: (events: PublishEventRequest[]) => Promise<PublishEventsResponse>,
): Promise<void> {
  const totals = { events: 0, jobs: 0, duplicates: 0 };
  let batch: Line[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const sent = batch;
    batch = [];
    const { results } = await send(sent.map((line) => line.request)).catch((error: unknown) => {
      throw refusal(error, sent, totals.events);
    });
    for (const result of results) {
      if (out.json) out.message(PublishEventResponseSchema, result, true);
      totals.jobs += result.jobIds.length;
      if (result.duplicate) totals.duplicates++;
    }
    totals.events += sent.length;
    out.status(`published ${totals.events} events…`);
  };
  let number = 0;
  for await (const text of lines) {
    number++;
    if (text.trim() === "") continue;
    batch.push({ number, request: parseLine(text, number, defaults) });
    if (batch.length === batchSize) await flush();
  }
  await flush();
  out.status("");
  if (out.json) return;
  const already = totals.duplicates > 0 ? `; ${totals.duplicates} already published` : "";
  out.line(`published ${plural(totals.events, "event")}: ${plural(totals.jobs, "job")}${already}`);
}

function parseLine(text: string, number: number, defaults: { clientId: string; event: string }): PublishEventRequest {
  let request: PublishEventRequest;
  try {
    request = fromJsonString(PublishEventRequestSchema, text);
  } catch (error) {
    throw new UsageError(`line ${number} is not a PublishEvent request as JSON: ${(error as Error).message}`);
  }
  request.clientId ||= defaults.clientId;
  request.event ||= defaults.event;
  return request;
}

/** The service's refusal of a batch, with its `events[i]` turned into the line it came from. */
function refusal(error: unknown, sent: readonly Line[], publishedBefore: number): unknown {
  if (!(error instanceof ConnectError)) return error;
  const first = sent[0]?.number ?? 0;
  const last = sent.at(-1)?.number ?? 0;
  const message = error.rawMessage.replace(/^events\[(\d+)\]/, (whole, index: string) => {
    const line = sent[Number(index)];
    return line ? `line ${line.number}` : whole;
  });
  const before =
    publishedBefore > 0 ? `the ${plural(publishedBefore, "event")} before line ${first} were published` : "nothing was published";
  return new ConnectError(`${message} (lines ${first}–${last} were refused together; ${before})`, error.code);
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;
