import test from "ava";
import { specEncodedGrpcMessage } from "../../../src/api/transport/grpc-message.js";

// What @grpc/grpc-js does with grpc-message (decodeURI), and what connect-es does (decodeURIComponent).
const decoders = { decodeURI, decodeURIComponent };

const texts = [
  'unknown event "No.Such"; GET /api/webhookSubscription/events lists the available events',
  "100% done: a=b&c=d, #1 ? + $ @",
  "é, ü, 日本, emoji 🚀, tab\tand newline\n",
  "",
];

for (const text of texts) {
  test(`${JSON.stringify(text.slice(0, 24))}: printable ASCII but % is kept, the rest percent-encoded, and every decoder reads the text back`, (t) => {
    const encoded = specEncodedGrpcMessage(encodeURIComponent(text));
    t.regex(encoded, /^[\x20-\x7e]*$/);
    t.is(encoded.replace(/%[0-9A-F]{2}/g, ""), text.replace(/[^\x20-\x24\x26-\x7e]/gu, ""));
    for (const [name, decode] of Object.entries(decoders)) t.is(decode(encoded), text, name);
  });
}

test("a value that is not percent-encoded as connect-es does it is sent as the text it is", (t) => {
  t.is(specEncodedGrpcMessage("50%"), "50%25");
  t.is(decodeURI(specEncodedGrpcMessage("50%")), "50%");
});
