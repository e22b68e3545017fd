#!/usr/bin/env bash
# dlqctl demo: start the local stack, build bin/dlqctl, seed a realistic
# incident under a fresh prefix and look at it the way on-call would.
# Runs unattended; leaves the stack running so you can keep exploring.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if [[ -t 1 ]]; then bold=$'\033[1m'; dim=$'\033[2m'; reset=$'\033[0m'; else bold=""; dim=""; reset=""; fi
heading() { printf '\n%s== %s ==%s\n' "$bold" "$*" "$reset"; }
run() { printf '%s$ %s%s\n' "$dim" "$*" "$reset"; "$@"; }

heading "1. Local stack: SQS emulator + S3 gateway on 127.0.0.1"
stack_env="$(scripts/stack.sh start)"
eval "$stack_env"
echo "SQS $AWS_ENDPOINT_URL_SQS   S3 $AWS_ENDPOINT_URL_S3"

heading "2. Build"
run go build -o bin/dlqctl .

prefix="demo-$(date +%H%M%S)-$$"
heading "3. Seed an incident: $prefix-orders, $prefix-payments -> $prefix-dlq (+ FIFO)"
echo "Messages are dead-lettered for real: received without deleting until the"
echo "RedrivePolicy moves them, so they carry DeadLetterQueueSourceArn."
summary="$(go run ./scripts/seed --prefix "$prefix")"
node -e '
  const s = JSON.parse(process.argv[1]);
  const fmt = o => Object.entries(o).sort().map(([k, v]) => `${k} ${v}`).join(", ");
  console.log(`${s.messages} messages in ${s.timings.total}`);
  console.log(`  per DLQ:   ${fmt(s.by_dlq)}`);
  console.log(`  per kind:  ${fmt(s.by_kind)}`);
  console.log(`  per class: ${fmt(s.by_class)}`);
' "$summary"

dlq="$prefix-dlq"
heading "4. Which DLQs are there, what feeds them, how full are they?"
run bin/dlqctl queues --prefix "$prefix"

heading "5. What is in $dlq? (peek: messages are released, not consumed)"
run bin/dlqctl sample "$dlq" -n 5

heading "Done"
cat <<EOF
The stack is still running. To keep exploring in this shell:
  eval "\$(scripts/stack.sh env)"
  bin/dlqctl sample $dlq -n 20 -o json
Stop it (and remove its temporary S3 data) with:
  scripts/stack.sh stop        # or: make stack-stop
EOF
