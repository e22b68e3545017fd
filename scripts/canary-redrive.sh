#!/usr/bin/env bash
# canary-redrive.sh: the scripted redrive path for CI jobs and cron.
#
#   scripts/canary-redrive.sh DLQ [--to source|QUEUE] [--class C | --filter EXPR]
#       [--canary 10] [--verify-for D] [--verify-poll 5s] [--verify-drain]
#       [--ramp 5,20,50,100] [--ramp-every 1m] [--max-returns 5%|off]
#       [--max-dest-backlog N] [--max-dest-lag GROUP:N] [--guard-interval 10s]
#       [--max-redrives 3] [-- GLOBAL_DLQCTL_FLAGS...]
#
# Three stages, each a dlqctl redrive with the same selection:
#   1. dry-run  what would move (nothing to move: exit 0, nothing changed),
#               with stage 3's pace and guards, so a flag the DLQ's broker
#               cannot honour is refused (exit 2) before anything moves
#   2. canary   move --canary messages, watch the DLQ for --verify-for
#               (when not given: dlqctl's computed window from what the
#               broker knows, e.g. maxReceiveCount × the destination's
#               visibility timeout + 30s on SQS; Kafka needs --verify-for
#               unless its retry topics name their delays)
#   3. redrive  the rest, ramped (--ramp/--ramp-every) with the guards:
#               --max-returns 5% by default where returns show in the DLQ's
#               depth (SQS, RabbitMQ; a kafka:// DLT has none: its canary
#               watches for returns, --max-dest-lag guards its consumers)
# It stops at the first stage that does not succeed, with that stage's
# dlqctl exit code (3 = canary or guard verdict failed, 4 = partial, 130 =
# interrupted, 2 = bad input) and one line on stderr saying why. A JSON
# summary of every stage that ran is printed on stdout in all cases.
#
# Flags after -- go to every dlqctl call (e.g. --region, --profile,
# --state-dir). DLQCTL names the binary (default: dlqctl on PATH). Needs jq.
set -uo pipefail

prog="canary-redrive"
die_usage() { echo "$prog: $*" >&2; exit 2; }


dlq=""
to="source"
select_args=()
canary=10
verify_for=""
verify_poll=""
verify_drain=""
ramp="5,20,50,100"
ramp_every="1m"
max_returns=""         # "": the default for the DLQ's broker (below)
max_dest_backlog=""
max_dest_lag=""
guard_interval=""
max_redrives=""
global_args=()

need() { [[ $# -ge 2 && -n "$2" ]] || die_usage "$1 needs a value; see the usage at the top of $0"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --to) need "$@"; to="$2"; shift 2 ;;
    --class|--filter|--rules) need "$@"; select_args+=("$1" "$2"); shift 2 ;;
    --canary) need "$@"; canary="$2"; shift 2 ;;
    --verify-for) need "$@"; verify_for="$2"; shift 2 ;;
    --verify-poll) need "$@"; verify_poll="$2"; shift 2 ;;
    --verify-drain) verify_drain=1; shift ;;
    --ramp) need "$@"; ramp="$2"; shift 2 ;;
    --ramp-every) need "$@"; ramp_every="$2"; shift 2 ;;
    --max-returns) need "$@"; max_returns="$2"; shift 2 ;;
    --max-dest-backlog) need "$@"; max_dest_backlog="$2"; shift 2 ;;
    --max-dest-lag) need "$@"; max_dest_lag="$2"; shift 2 ;;
    --guard-interval) need "$@"; guard_interval="$2"; shift 2 ;;
    --max-redrives) need "$@"; max_redrives="$2"; shift 2 ;;
    --) shift; global_args=("$@"); break ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die_usage "unknown flag $1; see the usage at the top of $0 (dlqctl global flags go after --)" ;;
    *) [[ -z "$dlq" ]] || die_usage "one DLQ at a time (got $dlq and $1)"; dlq="$1"; shift ;;
  esac
done
command -v jq >/dev/null 2>&1 || die_usage "jq is required to read dlqctl's JSON output; install jq and run again"
DLQCTL="${DLQCTL:-dlqctl}"
command -v "$DLQCTL" >/dev/null 2>&1 || die_usage "dlqctl not found ($DLQCTL); put it on PATH or set DLQCTL=/path/to/dlqctl"
[[ -n "$dlq" ]] || die_usage "which DLQ? usage: $0 DLQ [--to QUEUE] [--class C] [--canary N] [--ramp R1,R2,...]"
[[ "$canary" =~ ^[1-9][0-9]*$ ]] || die_usage "--canary must be a positive number of messages, got '$canary'"

# Flags every stage shares: destination, selection, loop guard, globals.
common=(--to "$to" "${select_args[@]}")
[[ -n "$max_redrives" ]] && common+=(--max-redrives "$max_redrives")
common+=("${global_args[@]}")

# Stage 3's pace and guards. --max-returns defaults to 5% where moved
# messages coming back show as the DLQ's depth growing; a Kafka topic keeps
# every record, so dlqctl refuses the flag there (the canary watches for
# returns instead). "off" drops it anywhere.
case "$max_returns" in
  off) max_returns="" ;;
  "") [[ "$dlq" == kafka://* ]] || max_returns="5%" ;;
esac
guard_args=(--ramp "$ramp" --ramp-every "$ramp_every")
[[ -n "$max_returns" ]] && guard_args+=(--max-returns "$max_returns")
[[ -n "$max_dest_backlog" ]] && guard_args+=(--max-dest-backlog "$max_dest_backlog")
[[ -n "$max_dest_lag" ]] && guard_args+=(--max-dest-lag "$max_dest_lag")
[[ -n "$guard_interval" ]] && guard_args+=(--guard-interval "$guard_interval")

stages='{}'
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"

# finish STATUS STAGE REASON CODE: print the JSON summary, the reason, exit.
finish() {
  local status="$1" stage="$2" reason="$3" code="$4"
  jq -n --arg dlq "$dlq" --arg to "$to" --arg status "$status" --arg stage "$stage" \
    --arg reason "$reason" --argjson code "$code" --arg started "$started" \
    --arg finished "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson stages "$stages" \
    '{dlq: $dlq, to: $to, status: $status, stopped_at: (if $status == "ok" then null else $stage end),
      reason: $reason, exit_code: $code, started_at: $started, finished_at: $finished,
      moved: (($stages.canary.moved // 0) + ($stages.redrive.moved // 0)),
      stages: $stages}'
  if [[ "$status" != "ok" ]]; then echo "$prog: $reason" >&2; fi
  exit "$code"
}

# run_stage NAME ARGS...: run dlqctl redrive -o json, keep its JSON (or its
# last stderr line when it printed none) under .stages[NAME]; sets rc/out/err.
run_stage() {
  local name="$1"; shift
  local errf; errf="$(mktemp)"
  out="$("$DLQCTL" redrive "$dlq" "$@" -o json 2>"$errf")"
  rc=$?
  err="$(grep -v '^\s*$' "$errf" | tail -n 1)"
  rm -f "$errf"
  local next=""
  if [[ -n "${out//[[:space:]]/}" ]] && [[ "$(jq -r 'type' <<<"$out" 2>/dev/null)" == "object" ]]; then
    next="$(jq --arg n "$name" --argjson rc "$rc" --argjson v "$out" '.[$n] = ($v + {exit_code: $rc})' <<<"$stages")"
  else
    out="{}"
    next="$(jq --arg n "$name" --argjson rc "$rc" --arg e "$err" '.[$n] = {exit_code: $rc, error: $e}' <<<"$stages")"
  fi
  [[ -n "$next" ]] && stages="$next"
}

trap 'finish interrupted "${stage:-start}" "interrupted; held messages were released, resume with dlqctl redrive resume RUN_ID" 130' INT TERM

# 1. dry-run
stage=dry-run
run_stage dry-run "${common[@]}" "${guard_args[@]}" --dry-run
if [[ $rc -ne 0 ]]; then
  finish failed dry-run "dry-run failed (exit $rc): ${err:-no detail}" "$rc"
fi
would="$(jq -r '.would_move // 0' <<<"$out")"
if [[ "$would" -eq 0 ]]; then
  finish ok dry-run "nothing to redrive" 0
fi

# 2. canary
stage=canary
canary_args=(--canary "$canary" --yes)
[[ -n "$verify_for" ]] && canary_args+=(--verify-for "$verify_for")
[[ -n "$verify_poll" ]] && canary_args+=(--verify-poll "$verify_poll")
[[ -n "$verify_drain" ]] && canary_args+=(--verify-drain)
run_stage canary "${common[@]}" "${canary_args[@]}"
if [[ $rc -ne 0 ]]; then
  detail="$(jq -r '.canary.detail // empty' <<<"$out" 2>/dev/null)"
  case $rc in
    3) finish canary-failed canary "canary failed: ${detail:-${err:-no detail}}; fix the consumer before redriving more" 3 ;;
    130) finish interrupted canary "canary interrupted; held messages were released" 130 ;;
    *) finish failed canary "canary run failed (exit $rc): ${err:-${detail:-no detail}}" "$rc" ;;
  esac
fi

# 3. ramped redrive with guards
stage=redrive
run_stage redrive "${common[@]}" "${guard_args[@]}" --yes
if [[ $rc -ne 0 ]]; then
  guard="$(jq -r 'if .guard then "\(.guard.name) tripped: \(.guard.detail)" else empty end' <<<"$out" 2>/dev/null)"
  run_id="$(jq -r '.run_id // empty' <<<"$out" 2>/dev/null)"
  case $rc in
    3) finish guard-tripped redrive "guard ${guard:-tripped}; what was not moved, and what came back, is in $dlq" 3 ;;
    4) finish partial redrive "redrive partial (run $run_id): ${err:-some messages could not be moved}; run again or dlqctl redrive resume $run_id" 4 ;;
    130) finish interrupted redrive "redrive interrupted (run $run_id); resume with dlqctl redrive resume $run_id --yes" 130 ;;
    *) finish failed redrive "redrive failed (exit $rc): ${err:-no detail}" "$rc" ;;
  esac
fi
finish ok redrive "" 0
