// A receiver for the quick start: verifies each notification's X-Signature with the subscription's
// key and prints each job once. Usage: node examples/receiver.mjs <signature-key.pem> [port]
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { httpReceiver } from "@webhooks/receiver";

const [keyFile, port = "9000"] = process.argv.slice(2);
if (!keyFile) {
  console.error("usage: node examples/receiver.mjs <signature-key.pem> [port]");
  process.exit(2);
}
const onNotification = (n) => console.log(`verified ${n.event} job ${n.jobId} attempt ${n.attempt}: ${JSON.stringify(n.payload)}`);
createServer(httpReceiver({ keys: [readFileSync(keyFile, "utf8")], onNotification })).listen(Number(port), "127.0.0.1", () =>
  console.log(`receiver listening on http://127.0.0.1:${port}/baseWebhookNotification`),
);
