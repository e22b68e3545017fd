#!/usr/bin/env bash
# dlqctl Kafka demo: the on-call path on Kafka dead-letter topics, against
# the local stack's Kafka server (kfake, its own process on 127.0.0.1).
# Seeds an incident the way Spring Kafka, Kafka Connect and the retry-topic
# pattern write it (from consumers that really fail), audits the DLT,
# triages the retry chain, dry-runs, canaries and ramps a replay of the
# failure that was fixed, and shows what stays pending. About 30 seconds;
# leaves the stack running (scripts/stack.sh stop).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if [[ -t 1 ]]; then bold=$'\033[1m'; dim=$'\033[2m'; reset=$'\033[0m'; else bold=""; dim=""; reset=""; fi
heading() { printf '\n%s== %s ==%s\n' "$bold" "$*" "$reset"; }
run() { printf '%s$ %s%s\n' "$dim" "$*" "$reset"; "$@"; }

heading "1. Local stack (Kafka: kfake on 127.0.0.1)"
eval "$(scripts/stack.sh start)"
echo "Kafka $DLQCTL_KAFKA_BROKERS"

heading "2. Build"
run go build -o bin/dlqctl .
export PATH="$repo/bin:$PATH"

prefix="demo-$(date +%H%M%S)-$$"
heading "3. Seed: $prefix-orders -> -retry-1/2/3 -> -dlq, $prefix-payments -> -dlt (Spring), $prefix-inventory -> -connect-dlq (Connect)"
run go run ./scripts/dlqctl-kafka-seed --prefix "$prefix"
K="kafka://$DLQCTL_KAFKA_BROKERS"

heading "4. Which dead-letter and retry topics, how much is pending, and are they set up to keep it"
run dlqctl queues "$K/$prefix"
run dlqctl audit "$K/$prefix-orders-dlq" "$K/$prefix-payments-dlt"

heading "5. Where in the retry chain, and why"
run dlqctl group "$K/$prefix-orders-dlq" --by stage,error --all
run dlqctl sample "$K/$prefix-payments-dlt" -n 3
run dlqctl group "$K/$prefix-payments-dlt" --by source,error

heading "6. The customer backfill shipped: dry run, canary, ramped replay of VALIDATION failures"
sel='.attributes.dlq_reason.value == "VALIDATION"'
run dlqctl redrive "$K/$prefix-orders-dlq" --filter "$sel" --dry-run
run dlqctl redrive "$K/$prefix-orders-dlq" --filter "$sel" --canary 2 --verify-for 3s --verify-poll 1s --yes
run dlqctl redrive "$K/$prefix-orders-dlq" --filter "$sel" --ramp 50,200 --ramp-every 2s \
  --max-dest-lag "$prefix-orders-service:100000" --yes

heading "7. What stays pending (malformed JSON: never replayable as it is)"
run dlqctl group "$K/$prefix-orders-dlq" --by error
run dlqctl check "$K/$prefix-orders-dlq" --max-visible 100 --max-age 1h

heading "Done"
echo "Open the dead-letter topics in the terminal UI (? for keys):"
echo "  eval \"\$(scripts/stack.sh env)\"; bin/dlqctl ui $K/"
echo "Stop the stack with: scripts/stack.sh stop"
