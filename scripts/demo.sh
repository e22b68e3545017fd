#!/usr/bin/env bash
# dlqctl demo: the on-call path from alert to closed incident, on the local
# stack. Starts the stack (idempotent), builds bin/dlqctl, seeds a realistic
# incident under a fresh prefix, triages it (queues, sample, group,
# classify), shows a plain DLQ going from unknown to classified with
# --logs (the consumer's CloudWatch Logs on moto), ships the consumers' fix, redrives the transient part (canary,
# then a ramped run with guards) and archives the permanent part to S3 as a
# verified copy before deleting it. Runs unattended in about a minute;
# leaves the stack running (it prints how to stop it).
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
summary="$(go run ./scripts/dlqctl-seed --prefix "$prefix")"
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

heading "6. What failed, from where?"
run bin/dlqctl group "$dlq" --by source,error

heading "7. What is safe to replay? (built-in rules; --rules FILE for your own)"
run bin/dlqctl classify "$dlq" --summary

heading "7a. What are the bodies? Broken JSON is evidence; text, XML or CSV alone is not"
run bin/dlqctl group "$dlq" --by encoding,class
text_id="$(bin/dlqctl sample "$dlq" -n 1 --filter '.payload_encoding == "text"' -o ndjson 2>/dev/null | node -e 'const l=require("fs").readFileSync(0,"utf8").trim().split("\n"); console.log(l[0] ? JSON.parse(l[0]).message_id : "")')"
if [ -n "$text_id" ]; then
  run bin/dlqctl classify "$dlq" --explain "$text_id"
fi

heading "7b. A plain DLQ: SQS recorded no reason, the consumer's logs did"
# A Lambda-style consumer of $prefix-shipping fails every message (its
# dependency times out) and logs only "processing record <id>" plus the
# runtime's "Task timed out" line keyed by the request id, to CloudWatch
# Logs (moto_server: AWS_ENDPOINT_URL_CLOUDWATCH_LOGS). After 2 receives
# the RedrivePolicy moves each message to $prefix-shipping-dlq, with no reason.
sqs_call() { # ACTION JSON -> response JSON (SQS JSON protocol)
  curl -sS -X POST "$AWS_ENDPOINT_URL_SQS/" -H "X-Amz-Target: AmazonSQS.$1" \
    -H 'Content-Type: application/x-amz-json-1.0' \
    --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:sqs" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -d "$2"
}
json_get() { node -e 'let v=JSON.parse(process.argv[1]); for (const k of process.argv.slice(2)) v=v[k]; console.log(v)' "$@"; }
ship_dlq_url="$(json_get "$(sqs_call CreateQueue "{\"QueueName\":\"$prefix-shipping-dlq\"}")" QueueUrl)"
ship_dlq_arn="$(json_get "$(sqs_call GetQueueAttributes "{\"QueueUrl\":\"$ship_dlq_url\",\"AttributeNames\":[\"QueueArn\"]}")" Attributes QueueArn)"
redrive="{\\\"deadLetterTargetArn\\\":\\\"$ship_dlq_arn\\\",\\\"maxReceiveCount\\\":\\\"2\\\"}"
ship_url="$(json_get "$(sqs_call CreateQueue "{\"QueueName\":\"$prefix-shipping\",\"Attributes\":{\"RedrivePolicy\":\"$redrive\"}}")" QueueUrl)"
entries="$(node -e 'console.log(JSON.stringify(Array.from({length: 10}, (_, i) => ({Id: String(i), MessageBody: JSON.stringify({eventType: "ShipmentRequested", eventVersion: 2, payload: {order: "o-" + (2000 + i)}})}))))')"
sqs_call SendMessageBatch "{\"QueueUrl\":\"$ship_url\",\"Entries\":$entries}" >/dev/null
log_group="/aws/lambda/$prefix-shipping"
shipwork="${TMPDIR:-/tmp}/dlqctl-demo/$prefix-shipping-worker"
mkdir -p "$(dirname "$shipwork")"
go build -o "$shipwork" ./scripts/dlqctl-worker
"$shipwork" --queue "$ship_url" --mode down --log-group "$log_group" --log-style lambda 2>>"${TMPDIR:-/tmp}/dlqctl-demo/$prefix-shipping-worker.log" &
ship_pid=$!
for _ in $(seq 1 300); do
  n="$(json_get "$(sqs_call GetQueueAttributes "{\"QueueUrl\":\"$ship_dlq_url\",\"AttributeNames\":[\"ApproximateNumberOfMessages\"]}")" Attributes ApproximateNumberOfMessages)"
  [[ "$n" -ge 10 ]] && break
  sleep 0.2
done
kill "$ship_pid" 2>/dev/null || true; wait "$ship_pid" 2>/dev/null || true
echo "10 messages dead-lettered from $prefix-shipping; the consumer logged to $log_group"
run bin/dlqctl group "$prefix-shipping-dlq" --by error
run bin/dlqctl classify "$prefix-shipping-dlq" --summary
echo "Everything is unknown: SQS recorded no reason. Search the consumer's logs:"
shipstate="${TMPDIR:-/tmp}/dlqctl-demo/$prefix-logs-state"
run bin/dlqctl classify "$prefix-shipping-dlq" --summary --logs "$log_group" --state-dir "$shipstate"
run bin/dlqctl group "$prefix-shipping-dlq" --by error --logs "$log_group" --state-dir "$shipstate"
ship_id="$(bin/dlqctl classify "$prefix-shipping-dlq" --logs "$log_group" --state-dir "$shipstate" -o ndjson 2>/dev/null | node -e 'const l=require("fs").readFileSync(0,"utf8").trim().split("\n"); console.log(JSON.parse(l[0]).message_id)')"
run bin/dlqctl classify "$prefix-shipping-dlq" --logs "$log_group" --state-dir "$shipstate" --explain "$ship_id"

work="${TMPDIR:-/tmp}/dlqctl-demo/$prefix"
state="$work/state"
mkdir -p "$work"
heading "8. The consumers of $prefix-orders and $prefix-payments get their fix"
go build -o "$work/worker" ./scripts/dlqctl-worker
echo down > "$work/mode"
pids=()
stop_workers() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop_workers EXIT
for q in "$prefix-orders" "$prefix-payments"; do
  "$work/worker" --queue "$q" --mode-file "$work/mode" 2>>"$work/worker.log" &
  pids+=($!)
done
echo "Two demo workers run in mode 'down' (every message fails: the dependency is down)."
echo "The dependency recovers and the fix is deployed:"
printf '%s$ %s%s\n' "$dim" "echo ok > $work/mode" "$reset"
echo ok > "$work/mode"

heading "9. Dry-run: what would move where?"
run bin/dlqctl redrive "$dlq" --class transient --dry-run --state-dir "$state"

heading "10. Canary: 3 messages, watched until the consumers processed them"
run bin/dlqctl redrive "$dlq" --class transient --canary 3 --verify-for 5s --verify-poll 1s --verify-drain --yes --state-dir "$state"

heading "11. Ramped redrive of the rest (5, 20, 50 msg/s), guarded"
run bin/dlqctl redrive "$dlq" --class transient --ramp 5,20,50 --ramp-every 2s --max-returns 5% --max-dest-backlog 500 --guard-interval 1s --yes --state-dir "$state"
run bin/dlqctl runs --state-dir "$state"

heading "12. Archive the permanent part to S3, verified before it is deleted from the DLQ"
bucket="$(printf '%s' "$prefix-archive" | tr 'A-Z_' 'a-z-')"
code="$(curl -sS -o /dev/null -w '%{http_code}' -X PUT "$AWS_ENDPOINT_URL_S3/$bucket" \
  --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')"
[[ "$code" == 200 ]] || { echo "demo: could not create bucket $bucket on $AWS_ENDPOINT_URL_S3 (HTTP $code)" >&2; exit 1; }
echo "bucket s3://$bucket created on the local S3 gateway"
run bin/dlqctl archive "$dlq" --to "s3://$bucket/dlq-archive" --class permanent --dry-run
printf '%s$ %s%s\n' "$dim" "bin/dlqctl archive $dlq --to s3://$bucket/dlq-archive --class permanent --delete --yes" "$reset"
bin/dlqctl archive "$dlq" --to "s3://$bucket/dlq-archive" --class permanent --delete --yes | tee "$work/archive.txt"
manifest="$(awk '$1 == "manifest" {print $2}' "$work/archive.txt")"

heading "13. Verify the archive (every part re-read: size, SHA-256, gzip, records), then preview restoring it to where each message came from"
run bin/dlqctl archive verify "$manifest"
run bin/dlqctl restore "$manifest" --to source --dry-run

heading "14. What is left is for humans (business rejections, unknowns)"
run bin/dlqctl classify "$dlq" --summary
run bin/dlqctl queues --prefix "$prefix"

heading "Done"
cat <<EOF
Archive (verified):  $manifest
Run journals:        $state
                     bin/dlqctl runs --state-dir $state
Worker log:          $work/worker.log
Runbooks:            docs/runbooks/README.md

The stack is still running. To keep exploring in this shell:
  eval "\$(scripts/stack.sh env)"
  bin/dlqctl ui $dlq --state-dir $state     # the same triage and redrive, full screen (? for keys)
  bin/dlqctl sample $dlq -n 20 -o json
  bin/dlqctl classify --from $manifest --summary
  DLQCTL=bin/dlqctl scripts/canary-redrive.sh $dlq --class transient -- --state-dir $state
Stop it (and remove its temporary S3 data) with:
  scripts/stack.sh stop        # or: make stack-stop
EOF
