import { styleText } from "node:util";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { toJson } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";

type Style = Parameters<typeof styleText>[0];

/**
 * Where a command writes: `--json` prints the answer as proto JSON (what the
 * REST API answers), otherwise readable text, coloured only on a terminal.
 */
export class Output {
  constructor(
    readonly json: boolean,
    private readonly stdout: NodeJS.WriteStream,
    private readonly stderr: NodeJS.WriteStream,
    private readonly colours: boolean,
  ) {}

  /** Prints one message as proto JSON (`--json`), on one line for streams. */
  message<D extends DescMessage>(schema: D, message: MessageShape<D>, compact = false): void {
    const value = toJson(schema, message, { alwaysEmitImplicit: true });
    this.stdout.write(`${JSON.stringify(value, null, compact ? undefined : 2)}\n`);
  }

  line(text = ""): void {
    this.stdout.write(`${text}\n`);
  }

  /** Progress and notes for a person: on stderr, so that stdout stays parseable. */
  note(text: string): void {
    this.stderr.write(`${text}\n`);
  }

  get terminal(): boolean {
    return Boolean(this.stderr.isTTY);
  }

  /** Rewrites the current stderr line (a progress bar); a no-op off a terminal. */
  status(text: string): void {
    if (this.stderr.isTTY) this.stderr.write(`\r${text}\u001b[K`);
  }

  style(style: Style, text: string): string {
    return this.colours ? styleText(style, text) : text;
  }

  /** Rows under a header, columns padded to their widest cell. */
  table(header: readonly string[], rows: readonly (readonly string[])[]): void {
    if (rows.length === 0) {
      this.line(this.style("dim", "(none)"));
      return;
    }
    const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)));
    const render = (cells: readonly string[]) =>
      cells
        .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join("  ")
        .trimEnd();
    this.line(this.style("bold", render(header)));
    for (const row of rows) this.line(render(row));
  }

  /** `label  value` lines, labels aligned. */
  fields(entries: ReadonlyArray<readonly [string, string]>): void {
    const width = Math.max(...entries.map(([label]) => label.length));
    for (const [label, value] of entries) this.line(`${this.style("dim", label.padEnd(width))}  ${value}`);
  }
}

export function time(timestamp: Timestamp | undefined): string {
  return timestamp ? timestampDate(timestamp).toISOString() : "";
}
