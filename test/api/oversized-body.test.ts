import test from "ava";
import { kill, type ServiceProcess, spawnService } from "../helpers/process.js";
import { API_KEY } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

// The service in a process of its own, as clients meet it: in this process
// the client and the server would take turns on one event loop, and a reset
// the server sends rarely overtakes the answer. The default MAX_BODY_BYTES (1 MiB) against a 5 MB body.
const running = {} as ServiceProcess;
let cleanup: (() => Promise<void>) | undefined;

test.before(async () => {
  const store = await storeTargets()[0]?.create();
  if (!store) throw new Error("no store target");
  cleanup = store.cleanup;
  Object.assign(running, await spawnService(store.env));
});

test.after.always(async () => {
  if (running.child) await kill(running, "SIGTERM");
  await cleanup?.();
});
const BODY = Buffer.alloc(5 * 1024 * 1024, "a");
const TRIES = 20;

/** The body as one buffer (Content-Length) or as a stream of 64 KiB chunks (chunked). */
function body(chunked: boolean): { body: RequestInit["body"]; duplex?: "half" } {
  if (!chunked) return { body: BODY };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let offset = 0; offset < BODY.length; offset += 65_536) controller.enqueue(BODY.subarray(offset, offset + 65_536));
      controller.close();
    },
  });
  return { body: stream, duplex: "half" };
}

async function post(path: string, chunked: boolean): Promise<string> {
  try {
    const response = await fetch(`${running.baseUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
      ...body(chunked),
    } as RequestInit);
    const json = (await response.json()) as { code?: string };
    return `${response.status} ${json.code}`;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return `${(error as Error).message} ${cause?.code ?? ""}`;
  }
}

for (const [name, path] of [
  ["REST", "/api/webhookSubscription"],
  ["Connect", "/webhooks.v1.SubscriptionService/CreateSubscription"],
] as const) {
  for (const chunked of [false, true]) {
    test.serial(`${name}: a 5 MB body ${chunked ? "sent chunked" : "with Content-Length"} reads 413 every time`, async (t) => {
      const outcomes: string[] = [];
      for (let i = 0; i < TRIES; i++) outcomes.push(await post(path, chunked));
      t.deepEqual(outcomes, Array<string>(TRIES).fill("413 resource_exhausted"));
    });
  }
}
