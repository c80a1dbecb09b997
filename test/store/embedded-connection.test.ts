import test from "ava";
import { EmbeddedConnection } from "../../src/store/postgres/embedded-connection.js";

const STAND_IN = new URL("../helpers/stand-in-thread.ts", import.meta.url);

test("a thread that stops refuses the statements waiting for it and every later one with why, and says so once", async (t) => {
  const heard: Error[] = [];
  const connection = await EmbeddedConnection.start({ directory: "anywhere", settings: [] }, (error) => heard.push(error), STAND_IN);
  const answered = connection.query("before");
  const stopping = connection.query("exit");
  const waiting = connection.query("after");
  t.deepEqual((await answered).rows, [{ said: "before" }]);
  const why = { message: "the embedded database's thread stopped (exit code 3)" };
  await t.throwsAsync(stopping, why);
  await t.throwsAsync(waiting, why);
  await t.throwsAsync(connection.query("later"), why);
  t.deepEqual(
    heard.map((error) => error.message),
    [why.message],
  );
  await connection.close(); // nothing left to close: returns
});

test("a thread that cannot open its database fails the start with its reason and fields", async (t) => {
  const error = await t.throwsAsync(
    EmbeddedConnection.start({ directory: "unopenable", settings: [] }, () => t.fail(), STAND_IN),
    {
      message: "the stand-in could not open its database",
    },
  );
  t.is((error as Error & { code?: string }).code, "58P01");
});

test("closing sends what was asked before it, ends the thread, and refuses later statements", async (t) => {
  const connection = await EmbeddedConnection.start({ directory: "anywhere", settings: [] }, () => t.fail("nothing broke"), STAND_IN);
  const before = connection.query("before");
  await connection.close();
  t.deepEqual((await before).rows, [{ said: "before" }]);
  await t.throwsAsync(connection.query("later"), { message: "the embedded database is closed" });
});
