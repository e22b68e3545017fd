#!/usr/bin/env bash
# dlqctl on RabbitMQ: the local stack's private RabbitMQ node, an incident
# dead-lettered for real (rejected, Spring recoverer, TTL, max-length, a
# quorum delivery limit), then queues, audit, group by reason, classify, a
# dry run, a canary and a redrive to the first death's route, and an
# archive to S3 with --delete. Runs unattended in under a minute; leaves
# the stack running (scripts/stack.sh stop stops it).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if [[ -t 1 ]]; then bold=$'\033[1m'; dim=$'\033[2m'; reset=$'\033[0m'; else bold=""; dim=""; reset=""; fi
heading() { printf '\n%s== %s ==%s\n' "$bold" "$*" "$reset"; }
run() { printf '%s$ %s%s\n' "$dim" "$(sed "s/$DLQCTL_AMQP_PASSWORD/***/g" <<<"$*")" "$reset"; "$@"; }

heading "1. Local stack (RabbitMQ $(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null || echo node))"
stack_env="$(scripts/stack.sh start)"
eval "$stack_env"
echo "RabbitMQ management API $DLQCTL_AMQP_MANAGEMENT_URL"
go build -o bin/dlqctl .
export PATH="$repo/bin:$PATH" DLQCTL_STATE_DIR="${DLQCTL_STATE_DIR:-$(mktemp -d)}"

prefix="demo$(date +%H%M%S)"
heading "2. Dead-letter an incident for real into $prefix.dlq"
bucket="demo-rabbitmq-$prefix"
go run ./scripts/dlqctl-seed-rabbitmq --prefix "$prefix" --bucket "$bucket"
# Credentials from the environment: the references carry none.
base="${DLQCTL_AMQP_URL#amqp://}"; hostpart="${base#*@}"
vhost="amqp://${hostpart%/}/%2f/"
dlq="${vhost}$prefix.dlq"

heading "3. Which DLQs, and is the dead-lettering sound?"
run dlqctl queues "$vhost" --prefix "$prefix"
run dlqctl audit "$vhost" --prefix "$prefix" || true

heading "4. Why did they die?"
run dlqctl group "$dlq" --by reason
run dlqctl classify "$dlq"

heading "5. Replay the rejected ones to where they were published"
run dlqctl redrive "$dlq" --to source --dry-run
run dlqctl redrive "$dlq" --to source --filter '.system.amqp.last_death.reason == "rejected"' --canary 1 --verify-for 2s --yes
run dlqctl redrive "$dlq" --to source --filter '.system.amqp.last_death.reason == "rejected"' --yes

heading "6. Archive the rest to S3, acknowledging after each verified part"
run dlqctl archive "$dlq" --to "s3://$bucket/rabbitmq" --delete --yes
run dlqctl sample "$dlq"
echo
echo "Open the vhost's DLQs in the terminal UI (? for keys):"
echo "  eval \"\$(scripts/stack.sh env)\"; bin/dlqctl ui $vhost"
echo "Stop the stack with: scripts/stack.sh stop"
