import { run } from "./program.js";

const interrupt = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => interrupt.abort());
}

process.exitCode = await run({
  argv: process.argv,
  env: process.env,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  interrupt: interrupt.signal,
});
// An interrupted stream may leave sockets behind; nothing else is left to do.
process.exit();
