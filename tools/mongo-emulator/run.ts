// Runs the MongoDB emulator (emulator.ts) on a free port.
//
//   node --import tsx tools/mongo-emulator/run.ts
//     serves until stopped (Ctrl-C), printing MONGODB_URL=… for a shell.
//   node --import tsx tools/mongo-emulator/run.ts -- npm test
//     runs the command with MONGODB_URL (and MONGODB_EMULATOR=congodb) set, then
//     says how many MongoDB tests (ava titles starting "mongodb:") passed, failed
//     and were skipped; fails if none ran. Exits with the command's status.
import { spawn } from "node:child_process";
import { startEmulator } from "./emulator.js";

const separator = process.argv.indexOf("--");
const command = separator < 0 ? [] : process.argv.slice(separator + 1);
const emulator = await startEmulator((line) => console.error(`== mongo emulator: ${line}`));

if (command.length === 0) {
  console.log(`MONGODB_URL=${emulator.url}`);
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void emulator.stop().then(() => process.exit(0)));
} else {
  console.log(`== mongo emulator (CongoDB) at ${emulator.url}`);
  const [file = "", ...args] = command;
  const child = spawn(file, args, {
    env: { ...process.env, MONGODB_URL: emulator.url, MONGODB_EMULATOR: "congodb" },
    stdio: ["inherit", "pipe", "pipe"],
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
  const counts = { passed: 0, failed: 0, skipped: 0 };
  const count = (line: string) => {
    // ava's lines: "✔ file › mongodb: title", "✘ [fail]: file › mongodb: title", "- [skip] file › mongodb: title".
    const [, mark] = /^\s*(✔|✘|- \[skip\])(?: \[\w+\]:)? (?:.* › )?mongodb: /.exec(line) ?? [];
    if (mark === "✔") counts.passed++;
    else if (mark === "✘") counts.failed++;
    else if (mark) counts.skipped++;
  };
  for (const [from, to] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    let rest = "";
    from.on("data", (chunk: Buffer) => {
      to.write(chunk);
      const lines = (rest + chunk.toString("utf8")).split("\n");
      rest = lines.pop() ?? "";
      lines.forEach(count);
    });
    from.on("end", () => count(rest));
  }
  const status = await new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? 1)));
  await emulator.stop();
  const ran = counts.passed + counts.failed;
  console.log(
    `== MongoDB tests against the emulator: ${ran} run (${counts.passed} passed, ${counts.failed} failed), ${counts.skipped} skipped`,
  );
  if (ran === 0) {
    console.log("== no MongoDB test ran: that is a failure");
    process.exit(status === 0 ? 1 : status);
  }
  process.exit(status);
}
