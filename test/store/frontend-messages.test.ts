import test from "ava";
import { serialize } from "pg-protocol";
import { FrontendMessages, isTerminate } from "../../src/store/postgres/frontend-messages.js";

const startup = serialize.startup({ user: "postgres", database: "postgres" });
const parse = serialize.parse({ name: "s1", text: "SELECT $1::int", types: [] });
const bind = serialize.bind({ statement: "s1", values: ["1"] });
const execute = serialize.execute();
const sync = serialize.sync();
const terminate = serialize.end();
const session = Buffer.concat([startup, parse, bind, execute, sync, terminate]);
const expected = [startup, parse, bind, execute, sync, terminate].map((message) => [...message]);

test("a session written at once comes out as its messages, the startup message first", (t) => {
  t.deepEqual(
    new FrontendMessages().push(session).map((message) => [...message]),
    expected,
  );
});

test("however the writes split the bytes, the same messages come out, each once it is whole", (t) => {
  for (const size of [1, 2, 3, 4, 5, 7, 13, 64]) {
    const messages = new FrontendMessages();
    const out: number[][] = [];
    for (let at = 0; at < session.length; at += size) {
      for (const message of messages.push(session.subarray(at, at + size))) out.push([...message]);
    }
    t.deepEqual(out, expected, `split into writes of ${size} bytes`);
  }
});

test("a message keeps its bytes when the buffer it came in is reused", (t) => {
  const bytes = Buffer.from(session);
  const [first] = new FrontendMessages().push(bytes);
  bytes.fill(0);
  t.deepEqual([...(first ?? [])], [...startup]);
});

test("a length shorter than the message's own header is refused, not waited on", (t) => {
  const messages = new FrontendMessages();
  messages.push(startup);
  t.throws(() => messages.push(Buffer.from([0x51, 0, 0, 0, 2])), { message: /declares 3 bytes/ });
});

test("Terminate is told apart from other messages", (t) => {
  t.true(isTerminate(terminate));
  t.false(isTerminate(sync));
  t.false(isTerminate(parse));
});
