#!/usr/bin/env bash
# The README's quick start, end to end: start the service on the embedded store, subscribe a receiver
# that verifies signatures, send it a sample, publish an event, read the delivery log. Run it from a
# checkout after `npm install`; PORT and RECEIVER_PORT choose the ports (8080 and 9000).
set -euo pipefail
set -m   # each background job in its own process group: stopping one stops npm's children too
cd "$(dirname "$0")/.."

PORT=${PORT:-8080}
RECEIVER_PORT=${RECEIVER_PORT:-9000}
WORK=$(mktemp -d)   # the embedded store, the logs and the key: nothing is left in the checkout
SERVICE_PID="" RECEIVER_PID=""
# Stops both jobs and waits until every process of theirs has exited (npm returns before the service
# has closed its store), then removes $WORK.
stop() {
  for pid in $SERVICE_PID $RECEIVER_PID; do kill -- "-$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for pid in $SERVICE_PID $RECEIVER_PID; do
    for _ in $(seq 300); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$WORK"
}
trap stop EXIT
step() { printf '\n\033[1m%s\033[0m\n' "$*"; }
# Prints the first N bytes of stdin and reads the rest (a bare `head` would stop curl mid-answer, and
# pipefail would end the script).
first() { local all; all=$(cat); printf '%s …\n' "${all:0:$1}"; }
# Waits until the command succeeds, for at most 60 s.
await() { for _ in $(seq 600); do if "$@" >/dev/null 2>&1; then return 0; fi; sleep 0.1; done; echo "gave up waiting for: $*" >&2; exit 1; }

export API_KEY=quickstart-key-0123456789abcdef
export ADMIN_TOKEN=quickstart-admin-0123456789abcdef
BASE=http://localhost:$PORT
RECEIVER=http://127.0.0.1:$RECEIVER_PORT/baseWebhookNotification

step "1. Start the service (a client holding \$API_KEY is created at start; loopback receivers allowed)"
PORT=$PORT DATA_DIR=$WORK/data BOOTSTRAP_API_KEY=$API_KEY ADMIN_TOKEN=$ADMIN_TOKEN \
  ALLOW_PRIVATE_TARGETS=true ALLOW_HTTP_TARGETS=true npm start >"$WORK/service.log" 2>&1 &
SERVICE_PID=$!
await curl -sf "$BASE/readyz"
curl -s "$BASE/readyz"; echo

step "2. The events you can subscribe to"
curl -s -H "authorization: Bearer $API_KEY" "$BASE/api/webhookSubscription/events" | first 300

step "3. Subscribe a receiver URL; the answer's signatureKey verifies X-Signature"
curl -s -H "authorization: Bearer $API_KEY" -H 'content-type: application/json' "$BASE/api/webhookSubscription" \
  -d "{\"event\":\"Order.Created\",\"url\":\"$RECEIVER\",\"description\":\"quick start\"}" | tee "$WORK/subscription.json" | first 300
node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1])); require("fs").writeFileSync(process.argv[2], s.signatureKey); console.log(s.id)' \
  "$WORK/subscription.json" "$WORK/signature-key.pem" >"$WORK/subscription-id"
SUBSCRIPTION=$(cat "$WORK/subscription-id")

step "4. Run the receiver (examples/receiver.mjs, with that key)"
node examples/receiver.mjs "$WORK/signature-key.pem" "$RECEIVER_PORT" >"$WORK/receiver.log" 2>&1 &
RECEIVER_PID=$!
await grep -q listening "$WORK/receiver.log"
cat "$WORK/receiver.log"

step "5. Send yourself a sample; the receiver verifies and prints it"
curl -s -H "authorization: Bearer $API_KEY" -H 'content-type: application/json' \
  "$BASE/api/webhookSubscription/triggerSampleEventNotification" -d "{\"event\":\"Order.Created\",\"url\":\"$RECEIVER\"}"; echo
await grep -q "verified Order.Created" "$WORK/receiver.log"
grep verified "$WORK/receiver.log"

step "6. An internal service publishes an event for the client (admin token)"
CLIENT=$(curl -s -H "authorization: Bearer $ADMIN_TOKEN" "$BASE/api/internal/clients" | node -e 'let t="";process.stdin.on("data",d=>t+=d).on("end",()=>console.log(JSON.parse(t).clients[0].id))')
curl -s -H "authorization: Bearer $ADMIN_TOKEN" -H 'content-type: application/json' "$BASE/api/internal/events/publish" \
  -d "{\"clientId\":\"$CLIENT\",\"event\":\"Order.Created\",\"payload\":{\"OrderId\":\"ord_42\",\"CustomerId\":\"cus_7\",\"TotalAmount\":42.5,\"Currency\":\"EUR\"}}"; echo
await grep -q ord_42 "$WORK/receiver.log"
grep ord_42 "$WORK/receiver.log"

step "7. Read the delivery log"
curl -s -H "authorization: Bearer $API_KEY" "$BASE/api/webhookSubscription/$SUBSCRIPTION/notifications" | first 400
curl -s -H "authorization: Bearer $API_KEY" "$BASE/api/webhookSubscription/$SUBSCRIPTION/notifications?status=DELIVERED" | grep -q ord_42
echo
echo "quick start: done"
