import { readFile } from "node:fs/promises";
import test from "ava";
import { startCommand } from "../../bench/start-command.js";

test("the bench reads npm start's node arguments and environment from package.json", async (t) => {
  const { scripts } = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));
  const { nodeArgs, entry, env } = startCommand(scripts.start);
  t.true(nodeArgs.includes("--max-semi-space-size=16"));
  t.true(nodeArgs.includes("--heap-growing-percent=100"));
  t.false(nodeArgs.includes("dist/main.js"));
  t.is(entry, "dist/main.js");
  t.is(env.MALLOC_TRIM_THRESHOLD_, "131072");
});

test("a start script's variables, node's arguments and its entry point", (t) => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's \${NAME:-value}, as package.json's start script writes it
  t.deepEqual(startCommand("A_=${A_:-1} B=${B:-} node --require ./x.cjs --flag dist/main.js"), {
    nodeArgs: ["--require", "./x.cjs", "--flag"],
    entry: "dist/main.js",
    env: { A_: "1", B: "" },
  });
});

test("a start script the bench cannot follow is refused, and named", (t) => {
  t.throws(() => startCommand("tsx src/main.ts"), { message: /does not run node/ });
  t.throws(() => startCommand("node dist/main.js --port 1"), { message: /entry point as its last word/ });
  t.throws(() => startCommand("A=1 node dist/main.js"), { message: /sets A=1/ });
});
