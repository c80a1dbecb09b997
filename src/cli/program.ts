import { readFileSync } from "node:fs";
import { Code, ConnectError } from "@connectrpc/connect";
import { Command } from "commander";
import { addAdminCommands } from "./commands/admin.js";
import type { Context } from "./commands/context.js";
import { addDeliveryCommands } from "./commands/deliveries.js";
import { addListenCommand } from "./commands/listen.js";
import { addPublishCommand } from "./commands/publish.js";
import { addStatsCommand } from "./commands/stats.js";
import { addSubscriptionCommands } from "./commands/subscriptions.js";
import { addTailCommand } from "./commands/tail.js";
import { Connection, type ConnectionOptions } from "./connection.js";
import { Output } from "./output.js";

export interface Terminal {
  argv: readonly string[];
  env: Record<string, string | undefined>;
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** Aborted by Ctrl-C (SIGINT) or SIGTERM: long-running commands (tail, listen) end cleanly. */
  interrupt: AbortSignal;
}

/** The `webhooks` program: every command over the generated Connect clients. */
export function buildProgram(terminal: Terminal): Command {
  const program = new Command("webhooks")
    .version(version(), "-V, --version", "print the version")
    .description("Work with the webhook notification service: subscriptions, the delivery log, live deliveries, publishing.")
    .option("--server <url>", "the service (default: WEBHOOKS_URL, else http://localhost:8080)")
    .option("--api-key <key>", "a client's API key (default: WEBHOOKS_API_KEY)")
    .option("--admin-token <token>", "the admin token, for admin commands (default: WEBHOOKS_ADMIN_TOKEN)")
    .option("--json", "print the answer as JSON (proto JSON, as the REST API answers); tail prints one activity per line")
    .showHelpAfterError()
    .configureOutput({
      writeOut: (text) => terminal.stdout.write(text),
      writeErr: (text) => terminal.stderr.write(text),
    });
  const context: Context = () => {
    const options = program.opts<ConnectionOptions & { json?: boolean }>();
    const colours = Boolean(terminal.stdout.isTTY) && !terminal.env.NO_COLOR;
    return {
      out: new Output(options.json ?? false, terminal.stdout, terminal.stderr, colours),
      connection: new Connection(options, terminal.env),
    };
  };
  addSubscriptionCommands(program, context);
  addDeliveryCommands(program, context);
  addTailCommand(program, context, terminal.interrupt);
  addListenCommand(program, context, terminal.interrupt);
  addStatsCommand(program, context);
  addAdminCommands(program, context, terminal.stdin);
  addPublishCommand(program, context, terminal.stdin);
  return program;
}

/** Runs one command line; answers the exit code. An error is one line on stderr with the service's message. */
export async function run(terminal: Terminal): Promise<number> {
  const program = buildProgram(terminal).exitOverride();
  try {
    await program.parseAsync(terminal.argv);
    return 0;
  } catch (error) {
    // Commander has printed its own message (usage errors, --help, --version).
    if (error instanceof Error && "exitCode" in error && typeof error.exitCode === "number" && "code" in error) return error.exitCode;
    if (error instanceof ConnectError) terminal.stderr.write(`error: ${error.rawMessage} (${codeName(error.code)})\n`);
    else terminal.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/[A-Z]/g, (letter, index: number) =>
    index === 0 ? letter.toLowerCase() : `_${letter.toLowerCase()}`,
  );
}

/** The package's version: package.json is two levels up from src/cli and from dist/cli alike. */
function version(): string {
  return (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}
