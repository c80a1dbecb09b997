import { readFile } from "node:fs/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Command } from "commander";
import { EventService, ListEventTypesResponseSchema } from "../../gen/webhooks/v1/event_service_pb.js";
import { EventTypeSchema } from "../../gen/webhooks/v1/subscription_pb.js";
import { UsageError } from "../connection.js";
import { addClientCommands } from "./clients.js";
import type { Context } from "./context.js";

/** A JSON object from a file, or from stdin for "-". */
export async function readJsonObject(source: string, what: string, stdin: NodeJS.ReadableStream): Promise<JsonObject> {
  let text: string;
  if (source === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
    text = Buffer.concat(chunks).toString("utf8");
  } else {
    text = await readFile(source, "utf8").catch((error: NodeJS.ErrnoException) => {
      throw new UsageError(`${what}: cannot read ${source} (${error.code ?? error.message})`);
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${what} is not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new UsageError(`${what} must be a JSON object`);
  return value as JsonObject;
}

/** The internal API, with the admin token: clients and API keys (clients.ts), event types (publishing: publish.ts). */
export function addAdminCommands(program: Command, context: Context, stdin: NodeJS.ReadableStream): void {
  addClientCommands(program, context);
  const eventTypes = program.command("event-types").description("admin: the event catalog");
  eventTypes
    .command("list", { isDefault: true })
    .description("every event type")
    .action(async () => {
      const { out, connection } = context();
      const answer = await connection.client(EventService, "adminToken").listEventTypes({});
      if (out.json) return out.message(ListEventTypesResponseSchema, answer);
      out.table(
        ["NAME", "SCHEMA", "DESCRIPTION"],
        answer.eventTypes.map((type) => [type.name, type.jsonSchema ? "yes" : "no", type.description]),
      );
    });
  eventTypes
    .command("register <name>")
    .description("adds an event type")
    .requiredOption("--description <text>")
    .requiredOption("--sample <file>", "sample payload, a JSON object ('-' for stdin)")
    .option("--schema <file>", "JSON Schema published payloads must satisfy")
    .action(async (name: string, options: { description: string; sample: string; schema?: string }) => {
      const { out, connection } = context();
      const samplePayload = await readJsonObject(options.sample, "--sample", stdin);
      const jsonSchema = options.schema ? await readJsonObject(options.schema, "--schema", stdin) : undefined;
      const { eventType } = await connection
        .client(EventService, "adminToken")
        .registerEventType({ name, description: options.description, samplePayload, ...(jsonSchema ? { jsonSchema } : {}) });
      if (!eventType) throw new Error("the service answered without an event type");
      if (out.json) return out.message(EventTypeSchema, eventType);
      out.line(`registered ${eventType.name}`);
    });
  eventTypes
    .command("update <name>")
    .description("changes an event type's description, sample or schema")
    .option("--description <text>")
    .option("--sample <file>", "sample payload, a JSON object ('-' for stdin)")
    .option("--schema <file>", "JSON Schema")
    .option("--clear-schema", "payloads are no longer validated")
    .action(async (name: string, options: { description?: string; sample?: string; schema?: string; clearSchema?: boolean }) => {
      const { out, connection } = context();
      const samplePayload = options.sample ? await readJsonObject(options.sample, "--sample", stdin) : undefined;
      const jsonSchema = options.schema ? await readJsonObject(options.schema, "--schema", stdin) : undefined;
      const { eventType } = await connection.client(EventService, "adminToken").updateEventType({
        name,
        ...(options.description === undefined ? {} : { description: options.description }),
        ...(samplePayload ? { samplePayload } : {}),
        ...(jsonSchema ? { jsonSchema } : {}),
        clearJsonSchema: options.clearSchema ?? false,
      });
      if (!eventType) throw new Error("the service answered without an event type");
      if (out.json) return out.message(EventTypeSchema, eventType);
      out.line(`updated ${eventType.name}`);
    });
}
