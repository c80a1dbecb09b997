import { createServer } from "node:net";
import test from "ava";
import { startExpectingExit } from "./helpers/process.js";

/** A port nothing listens on: bound by us, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function refusesToStart(t: import("ava").ExecutionContext, url: string, reason: RegExp) {
  const { code, stderr } = await startExpectingExit({ DATABASE_URL: url });
  t.is(code, 2, stderr);
  t.regex(stderr, /^DATABASE_URL [^\n]+\n$/, "one line naming DATABASE_URL");
  t.regex(stderr, reason);
}

test("PostgreSQL on a closed port: exit 2 with one line naming DATABASE_URL", async (t) => {
  await refusesToStart(t, `postgres://postgres@127.0.0.1:${await closedPort()}/test`, /cannot connect: connect ECONNREFUSED/);
});

test("MongoDB on a closed port: exit 2 with one line naming DATABASE_URL, within seconds", async (t) => {
  await refusesToStart(t, `mongodb://127.0.0.1:${await closedPort()}/test`, /cannot connect: connect ECONNREFUSED/);
});

test("the password is not printed", async (t) => {
  const { stderr } = await startExpectingExit({ DATABASE_URL: `postgres://app:hunter2secret@127.0.0.1:${await closedPort()}/test` });
  t.false(stderr.includes("hunter2secret"), stderr);
});

const postgresUrl = process.env.POSTGRES_URL;
if (postgresUrl) {
  test("PostgreSQL without the role: exit 2 with one line naming DATABASE_URL and the role", async (t) => {
    const url = new URL(postgresUrl);
    url.username = "no_such_role_wh";
    url.password = "";
    await refusesToStart(t, url.toString(), /role "no_such_role_wh" does not exist/);
  });

  test("PostgreSQL without the database: exit 2 with one line naming DATABASE_URL and the database", async (t) => {
    const url = new URL(postgresUrl);
    url.pathname = "/no_such_database_wh";
    await refusesToStart(t, url.toString(), /database "no_such_database_wh" does not exist/);
  });
} else test.skip("PostgreSQL without the role or the database: set POSTGRES_URL", () => {});
