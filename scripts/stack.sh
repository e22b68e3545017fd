#!/usr/bin/env bash
# Local AWS stack for dlqctl development and tests:
#   SQS: local-aws-sqs 2.0.2 (node, scripts/sqs/server.mjs), in memory
#   S3:  versitygw v1.8.0 (posix backend over a temporary directory)
#   RabbitMQ: Debian's rabbitmq-server (3.10.x) as a private node with the
#        management plugin (see "RabbitMQ" below)
#   and a second, independent SQS + S3:
#   moto_server (moto 5.2.1, python), in memory, SQS and S3 on ONE port
# all on 127.0.0.1, on free ports picked at start.
#
# Usage: scripts/stack.sh start|stop|restart|env|status
#   start    install what is missing, start the servers, wait until they
#            answer, print the env (same as `env`). Already running: just
#            print the env (a running stack without moto gets moto added,
#            its queues untouched).
#   stop     stop the processes this script started, remove the S3 data dir
#   env      print `export ...` lines:  eval "$(scripts/stack.sh env)"
#   unenv    print the `unset` line that undoes env (before working on AWS
#            in the same shell):          eval "$(scripts/stack.sh unenv)"
#   status   print what runs where; exit 0 only when every server answers
#
# Env file variables:
#   AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_S3   local-aws-sqs / versitygw
#   AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_REGION  for those two
#   DLQCTL_MOTO_ENDPOINT   moto_server, SQS and S3 (any credentials, e.g.
#                          testing/testing; region us-east-1; S3 path-style)
#   AWS_ENDPOINT_URL_CLOUDWATCH_LOGS   moto_server's CloudWatch Logs (the
#                          SDK's per-service variable; dlqctl --logs)
#   DLQCTL_KAFKA_BROKERS   kfake (franz-go's Kafka protocol server, its own
#                          process): bootstrap HOST:PORT, no topics at start
#
# State lives in ${DLQCTL_STACK_DIR:-<repo>/.stack}: pids, logs, the env
# file (read by internal/testenv) and the path of the S3 data dir.
#
# Notes found while wiring this up:
#  - versitygw runs in single-account mode (no IAM service): the root
#    access/secret key pair below is the only credential; SQS ignores auth.
#  - versitygw starts with no buckets; tests create their own with
#    CreateBucket (path-style addressing; the endpoint is an IP address so the
#    SDK picks path style even without UsePathStyle, set it anyway).
#  - Checksums with aws-sdk-go-v2 defaults over plain HTTP: PutObject sends
#    no x-amz-checksum-* header (signed X-Amz-Content-Sha256 only); versitygw
#    stores and returns a full-object CRC64NVME of its own. An explicit
#    ChecksumAlgorithm=SHA256 is stored and returned by HeadObject with
#    ChecksumMode=ENABLED (multipart: COMPOSITE "<b64>-N"). No
#    AWS_REQUEST_CHECKSUM_CALCULATION override is needed.
#  - local-aws-sqs is in-memory: stop (or a crash) loses every queue.
#  - moto_server routes a request by its SigV4 credential scope
#    (".../us-east-1/sqs/aws4_request"): an unsigned request is S3. The probe
#    therefore sends a dummy Authorization header (moto does not verify
#    signatures). Python takes ~1 s to start it; start waits up to ~30 s.
#    It is in-memory too, and logs one line per request to moto.log.
#    MOTO_SERVER=/path/to/moto_server overrides the PATH lookup.
#  - docs/emulators.md lists how local-aws-sqs, moto and AWS differ.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stack_dir="${DLQCTL_STACK_DIR:-$repo/.stack}"
sqs_dir="$repo/scripts/sqs"
vgw_module="github.com/versity/versitygw/cmd/versitygw"
vgw_version="v1.8.0"
access_key="dlqctl-local"
secret_key="dlqctl-local-secret"
region="us-east-1"
moto_version="5.2.1"

log() { printf 'stack: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found in PATH ($2)"; }

vgw_bin() {
  if [[ -n "${VERSITYGW:-}" ]]; then echo "$VERSITYGW"; return; fi
  local gobin
  gobin="$(go env GOBIN)"
  [[ -n "$gobin" ]] || gobin="$(go env GOPATH)/bin"
  echo "$gobin/versitygw"
}

install_deps() {
  need node "Node.js 20+ runs the SQS emulator"
  need npm "installs the SQS emulator"
  local want have=""
  want="$(node -p "require('$sqs_dir/package.json').dependencies['local-aws-sqs']")"
  if [[ -f "$sqs_dir/node_modules/local-aws-sqs/package.json" ]]; then
    have="$(node -p "require('$sqs_dir/node_modules/local-aws-sqs/package.json').version")"
  fi
  if [[ "$have" != "$want" ]]; then
    log "installing local-aws-sqs $want (npm ci in scripts/sqs)"
    (cd "$sqs_dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  fi

  local vgw
  vgw="$(vgw_bin)"
  if [[ -z "${VERSITYGW:-}" ]]; then
    need go "installs versitygw"
    # `go version -m` tells which module version a binary was built from.
    if [[ ! -x "$vgw" ]] || ! go version -m "$vgw" 2>/dev/null | grep -q "$vgw_version"; then
      log "installing versitygw $vgw_version (go install, takes a few minutes the first time)"
      go install "$vgw_module@$vgw_version" >&2
    fi
  fi
  [[ -x "$vgw" ]] || die "versitygw not found at $vgw"

  install_moto
  local mv
  mv="$(moto_installed_version)"
  if [[ -n "$mv" && "$mv" != "$moto_version" ]]; then
    log "warning: moto $mv found, tests and docs/emulators.md assume $moto_version (pip install 'moto[server]==$moto_version')"
  fi
}

moto_bin() {
  if [[ -n "${MOTO_SERVER:-}" ]]; then echo "$MOTO_SERVER"; return; fi
  command -v moto_server 2>/dev/null || true
}

# moto_python: the interpreter that runs moto_server (read from its
# shebang; pyenv shims resolved); "" when it cannot be told.
moto_python() {
  local bin real
  bin="$(moto_bin)"
  real="$bin"
  if command -v pyenv >/dev/null 2>&1 && [[ "$bin" == */shims/* ]]; then
    real="$(pyenv which moto_server 2>/dev/null || echo "$bin")"
  fi
  head -n 1 "$real" 2>/dev/null | sed -n 's/^#! *//p'
}

# moto_installed_version: the moto version importable by that interpreter.
moto_installed_version() {
  local py
  py="$(moto_python)"
  [[ -n "$py" ]] || return 0
  # shellcheck disable=SC2086 # "#!/usr/bin/env python3" splits on purpose
  $py -c 'import moto; print(moto.__version__)' 2>/dev/null || true
}

install_moto() {
  if [[ -n "${MOTO_SERVER:-}" ]]; then
    [[ -x "$MOTO_SERVER" ]] || die "MOTO_SERVER=$MOTO_SERVER is not executable"
    return 0
  fi
  [[ -n "$(moto_bin)" ]] && return 0
  local pip="" plog="$stack_dir/pip-moto.log"
  if command -v pip >/dev/null 2>&1; then pip="pip"
  elif command -v pip3 >/dev/null 2>&1; then pip="pip3"
  elif command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then pip="python3 -m pip"
  fi
  [[ -n "$pip" ]] || die "moto_server not found and no pip to install it: install Python 3 and run pip install 'moto[server]==$moto_version'"
  log "installing moto $moto_version (pip install 'moto[server]==$moto_version', log in $plog)"
  # shellcheck disable=SC2086
  if ! $pip install --quiet "moto[server]==$moto_version" >"$plog" 2>&1; then
    die "moto_server not found and pip install 'moto[server]==$moto_version' failed (see $plog)"
  fi
  command -v pyenv >/dev/null 2>&1 && pyenv rehash >/dev/null 2>&1 || true
  hash -r
  [[ -n "$(moto_bin)" ]] || die "pip installed moto $moto_version but moto_server is not in PATH (add pip's script directory to PATH, or set MOTO_SERVER)"
}

# free_ports N: print N distinct free TCP ports on 127.0.0.1 (node is the one
# runtime we can count on; python3 may be missing on CI).
free_ports() {
  node -e '
    const net = require("net");
    const n = Number(process.argv[1]);
    const servers = [];
    (async () => {
      for (let i = 0; i < n; i++) {
        const s = net.createServer();
        await new Promise((ok, ko) => { s.once("error", ko); s.listen(0, "127.0.0.1", ok); });
        servers.push(s);
      }
      console.log(servers.map(s => s.address().port).join(" "));
      servers.forEach(s => s.close());
    })().catch(e => { console.error(e); process.exit(1); });
  ' "$1"
}

# free_port_between LOW HIGH [EXCLUDED...]: a port in LOW..HIGH that
# 127.0.0.1 can bind now and that is none of EXCLUDED.
free_port_between() {
  node -e '
    const net = require("net");
    const [lo, hi, ...excl] = process.argv.slice(1).map(Number);
    const tryPort = (p) => new Promise((ok) => {
      const s = net.createServer();
      s.once("error", () => ok(false));
      s.listen(p, "127.0.0.1", () => s.close(() => ok(true)));
    });
    (async () => {
      for (let i = 0; i < 200; i++) {
        const p = lo + Math.floor(Math.random() * (hi - lo + 1));
        if (excl.includes(p)) continue;
        if (await tryPort(p)) { console.log(p); return; }
      }
      process.exit(1);
    })();
  ' "$@"
}

# probe sqs|s3|moto URL: exit 0 when the server answers a real request.
# moto: SQS ListQueues (JSON protocol; routed to SQS by the credential scope
# of a dummy SigV4 header, unchecked by moto) and S3 ListBuckets.
probe() {
  node -e '
    const [kind, url] = process.argv.slice(1);
    const auth = (svc) => ({ authorization:
      "AWS4-HMAC-SHA256 Credential=testing/20200101/us-east-1/" + svc +
      "/aws4_request, SignedHeaders=host, Signature=0" });
    const listQueues = (extra) => fetch(url + "/", { method: "POST", body: "{}",
      headers: { "content-type": "application/x-amz-json-1.0",
                 "x-amz-target": "AmazonSQS.ListQueues", ...extra } });
    const sqsOK = (r) => r.status === 200 &&
      (r.headers.get("content-type") || "").includes("json");
    let req;
    if (kind === "sqs") req = listQueues({}).then(sqsOK);
    else if (kind === "s3") req = fetch(url + "/health").then(r => r.status === 200);
    else req = Promise.all([
      listQueues(auth("sqs")).then(sqsOK),
      fetch(url + "/", { headers: auth("s3") }).then(r => r.status === 200),
    ]).then(([a, b]) => a && b);
    req.then(ok => process.exit(ok ? 0 : 1), () => process.exit(1));
    setTimeout(() => process.exit(1), 2000).unref();
  ' "$1" "$2"
}

# alive PIDFILE PATTERN: the recorded pid runs and is the process we started
# (its command line matches PATTERN), so a recycled pid is never signalled.
alive() {
  local pid
  [[ -f "$1" ]] || return 1
  pid="$(cat "$1")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  ps -p "$pid" -o args= 2>/dev/null | grep -q -- "$2"
}

# core_running: local-aws-sqs and versitygw run and answer.
core_running() {
  [[ -f "$stack_dir/env" ]] || return 1
  alive "$stack_dir/sqs.pid" server.mjs && alive "$stack_dir/s3.pid" versitygw || return 1
  # shellcheck disable=SC1091
  (source "$stack_dir/env" && probe sqs "$AWS_ENDPOINT_URL_SQS" && probe s3 "$AWS_ENDPOINT_URL_S3")
}

moto_running() {
  [[ -f "$stack_dir/env" ]] || return 1
  alive "$stack_dir/moto.pid" moto_server || return 1
  # shellcheck disable=SC1091
  (source "$stack_dir/env" && [[ -n "${DLQCTL_MOTO_ENDPOINT:-}" ]] && probe moto "$DLQCTL_MOTO_ENDPOINT")
}

running() { core_running && moto_running && rabbitmq_running; }

# spawn LOG CMD...: start CMD detached from our stdio (so `$(stack.sh start)`
# returns) and from the terminal's process group; print its pid.
spawn() {
  local logf="$1"; shift
  if command -v setsid >/dev/null 2>&1; then
    setsid "$@" </dev/null >"$logf" 2>&1 &
  else
    nohup "$@" </dev/null >"$logf" 2>&1 &
  fi
  echo $!
}

stop_pid() { # PIDFILE PATTERN NAME
  if alive "$1" "$2"; then
    local pid i
    pid="$(cat "$1")"
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$3 (pid $pid) ignored SIGTERM, killing"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped $3 (pid $pid)"
  fi
  rm -f "$1"
}

# --- Kafka: franz-go's kfake as its own process (scripts/dlqctl-kfake) ---
# Built with `go build` into the stack dir on every start (cached after the
# first), listening on a free 127.0.0.1 port it picks itself (--port 0) and
# reports in kfake.addr once bound: no window between picking and binding.
# In memory: stop (or a crash) loses every topic. Env: DLQCTL_KAFKA_BROKERS.
kfake_running() {
  alive "$stack_dir/kfake.pid" dlqctl-kfake && [[ -s "$stack_dir/kfake.addr" ]] &&
    "$stack_dir/dlqctl-kfake" probe "$(cat "$stack_dir/kfake.addr")" >/dev/null 2>&1
}

start_kfake() { # -> 0 started (or already running), 1 failed
  kfake_running && return 0
  stop_kfake 2>/dev/null
  need go "builds the Kafka test server (scripts/dlqctl-kfake)"
  (cd "$repo" && go build -o "$stack_dir/dlqctl-kfake.tmp" ./scripts/dlqctl-kfake) >&2 ||
    { log "could not build scripts/dlqctl-kfake"; return 1; }
  mv "$stack_dir/dlqctl-kfake.tmp" "$stack_dir/dlqctl-kfake"
  rm -f "$stack_dir/kfake.addr"
  spawn "$stack_dir/kfake.log" "$stack_dir/dlqctl-kfake" serve --port 0 \
    --ready-file "$stack_dir/kfake.addr" >"$stack_dir/kfake.pid"
  local i
  for i in $(seq 1 100); do # up to ~20 s
    if kfake_running; then
      log "kfake         on $(cat "$stack_dir/kfake.addr") (pid $(cat "$stack_dir/kfake.pid")), Kafka protocol"
      return 0
    fi
    alive "$stack_dir/kfake.pid" dlqctl-kfake || break
    sleep 0.2
  done
  log "kfake did not come up; last log lines:"
  tail -n 5 "$stack_dir/kfake.log" >&2 || true
  stop_kfake
  return 1
}

stop_kfake() {
  stop_pid "$stack_dir/kfake.pid" dlqctl-kfake "kfake"
  rm -f "$stack_dir/kfake.addr" "$stack_dir/kfake.addr.tmp" "$stack_dir/dlqctl-kfake" "$stack_dir/dlqctl-kfake.tmp"
}

kfake_env_lines() {
  if [[ -s "$stack_dir/kfake.addr" ]]; then
    echo "# Kafka (kfake, in memory): the bootstrap brokers of kafka://HOST:PORT/TOPIC."
    echo "export DLQCTL_KAFKA_BROKERS=$(cat "$stack_dir/kfake.addr")"
  fi
}

# ensure_kfake: start kfake if needed and put its line in the env file.
ensure_kfake() {
  local try
  for try in 1 2 3; do
    if start_kfake; then
      local tmp="$stack_dir/env.kfake.tmp"
      grep -v -e '^export DLQCTL_KAFKA_BROKERS=' -e '^# Kafka (kfake' "$stack_dir/env" >"$tmp" || true
      kfake_env_lines >>"$tmp"
      mv "$tmp" "$stack_dir/env"
      return 0
    fi
  done
  die "could not start kfake; log in $stack_dir/kfake.log"
}

status_kfake() { # -> 0 running
  if alive "$stack_dir/kfake.pid" dlqctl-kfake; then
    echo "kafka: pid $(cat "$stack_dir/kfake.pid") on $(cat "$stack_dir/kfake.addr" 2>/dev/null) ($stack_dir/kfake.log)"
    return 0
  fi
  echo "kafka: not running"
  return 1
}

cmd_stop() {
  # The servers stop side by side: each is sent SIGTERM and waited for (up
  # to 5 s, RabbitMQ 10 s, then SIGKILL); one after the other this took
  # 17 s at the end of a CI run.
  stop_pid "$stack_dir/sqs.pid" server.mjs "local-aws-sqs" &
  stop_pid "$stack_dir/s3.pid" versitygw "versitygw" &
  stop_pid "$stack_dir/moto.pid" moto_server "moto_server" &
  stop_kfake &
  stop_rabbitmq &
  wait
  if [[ -f "$stack_dir/s3dir" ]]; then
    local d
    d="$(cat "$stack_dir/s3dir")"
    # Only ever remove a directory this script created.
    [[ "$d" == */dlqctl-s3.* && -d "$d" ]] && rm -rf "$d"
    rm -f "$stack_dir/s3dir"
  fi
  rm -f "$stack_dir/env"
}

write_env() { # SQS_URL S3_URL MOTO_URL
  local tmp="$stack_dir/env.tmp"
  cat >"$tmp" <<EOF
export AWS_ENDPOINT_URL_SQS=$1
export AWS_ENDPOINT_URL_S3=$2
export AWS_ACCESS_KEY_ID=$access_key
export AWS_SECRET_ACCESS_KEY=$secret_key
export AWS_REGION=$region
export AWS_DEFAULT_REGION=$region
export DLQCTL_MOTO_ENDPOINT=$3
# CloudWatch Logs (dlqctl --logs, the demo worker's log group): only moto has it.
export AWS_ENDPOINT_URL_CLOUDWATCH_LOGS=$3
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL
EOF
  kfake_env_lines >>"$tmp"
  mv "$tmp" "$stack_dir/env"
  merge_rabbitmq_env
}

# spawn_moto runs moto_server through scripts/moto_server.py, which makes
# SQS deletes and receives safe under concurrency (moto 5.2.1 can bring a
# deleted message back when two deletes run at once, and can lose or
# double messages when two receives run at once; docs/emulators.md rows 28
# and 29).
# Without a known interpreter moto_server runs as installed, with a warning.
spawn_moto() { # PORT
  local py
  py="$(moto_python)"
  if [[ -n "$py" ]] && $py -c 'import moto.sqs.models' 2>/dev/null; then
    # shellcheck disable=SC2086 # "#!/usr/bin/env python3" splits on purpose
    spawn "$stack_dir/moto.log" $py "$repo/scripts/moto_server.py" -H 127.0.0.1 -p "$1" >"$stack_dir/moto.pid"
    return
  fi
  log "warning: moto_server's python not found: running moto_server as installed (concurrent SQS deletes can bring deleted messages back; docs/emulators.md row 28)"
  spawn "$stack_dir/moto.log" "$(moto_bin)" -H 127.0.0.1 -p "$1" >"$stack_dir/moto.pid"
}

start_once() { # -> 0 started, 1 failed (logs kept)
  local sqs_port s3_port moto_port s3dir vgw i
  read -r sqs_port s3_port moto_port <<<"$(free_ports 3)"
  s3dir="$(mktemp -d "${TMPDIR:-/tmp}/dlqctl-s3.XXXXXX")"
  echo "$s3dir" >"$stack_dir/s3dir"
  vgw="$(vgw_bin)"

  spawn_moto "$moto_port" # first: python is the slowest to come up
  spawn "$stack_dir/sqs.log" node "$sqs_dir/server.mjs" "$sqs_port" >"$stack_dir/sqs.pid"
  # --health exposes GET /health for the readiness probe; --quiet drops the
  # per-request log lines. Single-account mode: no --iam-* flags.
  spawn "$stack_dir/s3.log" "$vgw" \
    --access "$access_key" --secret "$secret_key" --region "$region" \
    --port "127.0.0.1:$s3_port" --health /health --quiet \
    posix "$s3dir" >"$stack_dir/s3.pid"

  for i in $(seq 1 150); do # up to ~30 s
    if probe sqs "http://127.0.0.1:$sqs_port" && probe s3 "http://127.0.0.1:$s3_port" &&
      probe moto "http://127.0.0.1:$moto_port"; then
      write_env "http://127.0.0.1:$sqs_port" "http://127.0.0.1:$s3_port" "http://127.0.0.1:$moto_port"
      log "local-aws-sqs on http://127.0.0.1:$sqs_port (pid $(cat "$stack_dir/sqs.pid"))"
      log "versitygw     on http://127.0.0.1:$s3_port (pid $(cat "$stack_dir/s3.pid")), data in $s3dir"
      log "moto_server   on http://127.0.0.1:$moto_port (pid $(cat "$stack_dir/moto.pid")), SQS and S3"
      return 0
    fi
    if ! alive "$stack_dir/sqs.pid" server.mjs || ! alive "$stack_dir/s3.pid" versitygw ||
      ! alive "$stack_dir/moto.pid" moto_server; then
      break
    fi
    sleep 0.2
  done
  log "a server did not come up; last log lines:"
  tail -n 5 "$stack_dir/sqs.log" "$stack_dir/s3.log" "$stack_dir/moto.log" >&2 || true
  return 1
}

# add_moto: the SQS/S3 pair runs (started by an older version of this
# script, or moto died): start only moto_server, keep their queues.
add_moto() { # -> 0 started, 1 failed
  local port i sqs s3
  stop_pid "$stack_dir/moto.pid" moto_server "moto_server"
  port="$(free_ports 1)"
  spawn_moto "$port"
  for i in $(seq 1 150); do
    if probe moto "http://127.0.0.1:$port"; then
      # shellcheck disable=SC1091
      sqs="$(source "$stack_dir/env" && echo "$AWS_ENDPOINT_URL_SQS")"
      # shellcheck disable=SC1091
      s3="$(source "$stack_dir/env" && echo "$AWS_ENDPOINT_URL_S3")"
      write_env "$sqs" "$s3" "http://127.0.0.1:$port"
      log "moto_server   on http://127.0.0.1:$port (pid $(cat "$stack_dir/moto.pid")), SQS and S3"
      return 0
    fi
    alive "$stack_dir/moto.pid" moto_server || break
    sleep 0.2
  done
  log "moto_server did not come up; last log lines:"
  tail -n 5 "$stack_dir/moto.log" >&2 || true
  stop_pid "$stack_dir/moto.pid" moto_server "moto_server"
  return 1
}

cmd_start() {
  if running; then
    log "already running"
    merge_rabbitmq_env
    ensure_kfake
    cat "$stack_dir/env"
    return 0
  fi
  if core_running; then
    install_deps
    local try
    for try in 1 2 3; do
      if moto_running || add_moto; then
        ensure_rabbitmq
        ensure_kfake
        cat "$stack_dir/env"
        return 0
      fi
    done
    die "could not start moto_server; log in $stack_dir/moto.log"
  fi
  mkdir -p "$stack_dir"
  cmd_stop 2>/dev/null # leftovers of a half-dead stack
  install_deps
  local attempt
  for attempt in 1 2 3; do # a free port can be taken between probe and bind
    if start_once; then
      ensure_rabbitmq
      ensure_kfake
      cat "$stack_dir/env"
      return 0
    fi
    cmd_stop
    log "retrying start ($attempt/3)"
  done
  die "could not start the stack; logs in $stack_dir"
}

cmd_env() {
  running && kfake_running || die "stack not running (scripts/stack.sh start)"
  cat "$stack_dir/env"
}

cmd_unenv() {
  # Every variable env exports (the env file when there is one), unset:
  # the shell is back to its own AWS configuration (profile, SSO, region).
  local vars="AWS_ENDPOINT_URL_SQS AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL_CLOUDWATCH_LOGS AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION AWS_DEFAULT_REGION DLQCTL_MOTO_ENDPOINT"
  if [[ -f "$stack_dir/env" ]]; then
    vars="$(sed -n 's/^export \([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' "$stack_dir/env" | tr '\n' ' ')"
  fi
  echo "unset ${vars% }"
}

cmd_status() {
  local ok=0
  if alive "$stack_dir/sqs.pid" server.mjs; then
    echo "sqs: pid $(cat "$stack_dir/sqs.pid") ($stack_dir/sqs.log)"
  else
    echo "sqs: not running"; ok=1
  fi
  if alive "$stack_dir/s3.pid" versitygw; then
    echo "s3:  pid $(cat "$stack_dir/s3.pid") data $(cat "$stack_dir/s3dir" 2>/dev/null) ($stack_dir/s3.log)"
  else
    echo "s3:  not running"; ok=1
  fi
  if alive "$stack_dir/moto.pid" moto_server; then
    echo "moto: pid $(cat "$stack_dir/moto.pid") ($stack_dir/moto.log)"
  else
    echo "moto: not running"; ok=1
  fi
  status_rabbitmq || ok=1
  status_kfake || ok=1
  if [[ $ok == 0 ]]; then
    if running && kfake_running; then
      grep -E '^export (AWS_ENDPOINT|DLQCTL_MOTO_ENDPOINT|DLQCTL_AMQP_MANAGEMENT_URL|DLQCTL_KAFKA_BROKERS)' "$stack_dir/env" | sed 's/^export /endpoint: /'
      echo "status: ok"
    else
      echo "status: processes up but not answering"; ok=1
    fi
  else
    echo "status: down"
  fi
  return $ok
}


# ---------------------------------------------------------------------------
# RabbitMQ: Debian's rabbitmq-server (3.10.x on these machines) as a PRIVATE
# node: its own node name, AMQP / distribution / epmd / management ports on
# 127.0.0.1, its own data, log, config, plugins file and Erlang cookie (HOME)
# under $stack_dir/rabbitmq, so it never meets a system node. A user with a
# password (guest is loopback-only and not what production looks like).
#   RABBITMQ_SERVER_BIN=/path/to/sbin overrides where rabbitmq-server,
#   rabbitmqctl and rabbitmq-plugins are looked up (default: the Debian
#   package's /usr/lib/rabbitmq/bin, then PATH).
# Env file variables (stack_dir/rabbitmq.env, appended to env):
#   DLQCTL_AMQP_URL             amqp://USER:PASS@127.0.0.1:PORT/ (default vhost)
#   DLQCTL_AMQP_MANAGEMENT_URL  http://127.0.0.1:PORT (management HTTP API)
#   DLQCTL_AMQP_USERNAME / DLQCTL_AMQP_PASSWORD  the same credentials
# ---------------------------------------------------------------------------
rabbit_user="dlqctl"
rabbit_pass="dlqctl-rabbit-secret"
rabbit_dir() { echo "$stack_dir/rabbitmq"; }

rabbit_bin() { # NAME -> path of the RabbitMQ script NAME
  local d
  for d in "${RABBITMQ_SERVER_BIN:-}" /usr/lib/rabbitmq/bin; do
    [[ -n "$d" && -x "$d/$1" ]] && { echo "$d/$1"; return 0; }
  done
  command -v "$1" 2>/dev/null || true
}

install_rabbitmq() {
  [[ -n "$(rabbit_bin rabbitmq-server)" ]] && return 0
  command -v apt-get >/dev/null 2>&1 ||
    die "rabbitmq-server not found and no apt-get to install it: install RabbitMQ 3.10+ with the management plugin (or set RABBITMQ_SERVER_BIN)"
  local sudo=""
  [[ "$(id -u)" == 0 ]] || sudo="sudo"
  log "installing rabbitmq-server (apt-get, log in $stack_dir/apt-rabbitmq.log)"
  # The package's own service is not ours: never start it (policy-rc.d 101).
  if ! { $sudo apt-get update -qq &&
    RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends rabbitmq-server; } \
    >"$stack_dir/apt-rabbitmq.log" 2>&1; then
    die "apt-get install rabbitmq-server failed (see $stack_dir/apt-rabbitmq.log)"
  fi
  # Debian starts the system node on install where an init system runs: stop
  # it, our node must be the only one the tests see (it uses other ports anyway).
  if command -v systemctl >/dev/null 2>&1; then $sudo systemctl stop rabbitmq-server >/dev/null 2>&1 || true; fi
  [[ -n "$(rabbit_bin rabbitmq-server)" ]] || die "rabbitmq-server installed but not found in /usr/lib/rabbitmq/bin or PATH"
}

# rabbit_env: the environment every RabbitMQ script of our node runs with.
rabbit_env() {
  local d ports
  d="$(rabbit_dir)"
  ports="$(cat "$d/ports")"
  local amqp dist epmd mgmt
  read -r amqp dist epmd mgmt <<<"$ports"
  echo "HOME=$d/home"
  echo "RABBITMQ_NODENAME=dlqctl-$amqp@localhost"
  echo "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1"
  echo "RABBITMQ_NODE_PORT=$amqp"
  echo "RABBITMQ_DIST_PORT=$dist"
  echo "ERL_EPMD_PORT=$epmd"
  echo "ERL_EPMD_ADDRESS=127.0.0.1"
  echo "RABBITMQ_CONFIG_FILE=$d/rabbitmq.conf"
  echo "RABBITMQ_ADVANCED_CONFIG_FILE=$d/advanced.config"
  echo "RABBITMQ_CONF_ENV_FILE=$d/rabbitmq-env.conf"
  echo "RABBITMQ_ENABLED_PLUGINS_FILE=$d/enabled_plugins"
  echo "RABBITMQ_MNESIA_BASE=$d/mnesia"
  echo "RABBITMQ_LOG_BASE=$d/log"
  echo "RABBITMQ_PID_FILE=$d/rabbit.pid"
  echo "RABBITMQ_LOGS=$d/log/rabbit.log"
  # Shared 2-core machines: no busy-waiting schedulers.
  echo "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=+sbwt none +sbwtdcpu none +sbwtdio none"
}

rabbit_exec() { # CMD ARGS... in a subshell with our node's environment
  (
    while IFS= read -r kv; do export "${kv?}"; done < <(rabbit_env)
    cd "$(rabbit_dir)" && "$@"
  )
}

rabbitmq_running() {
  local d
  d="$(rabbit_dir)"
  [[ -f "$d/env" ]] && alive "$d/server.pid" rabbitmq-server || return 1
  # shellcheck disable=SC1091
  (source "$d/env" && probe_rabbitmq "$DLQCTL_AMQP_URL" "$DLQCTL_AMQP_MANAGEMENT_URL")
}

# probe_rabbitmq AMQP_URL MGMT_URL: the AMQP port answers the protocol header
# with connection.start and the management API answers /api/overview with
# our credentials.
probe_rabbitmq() {
  node -e '
    const net = require("net");
    const [amqpURL, mgmt] = process.argv.slice(1);
    const u = new URL(amqpURL);
    const amqp = new Promise((ok) => {
      const s = net.connect(Number(u.port), u.hostname, () => s.write("AMQP\x00\x00\x09\x01"));
      s.once("data", (b) => { s.destroy(); ok(b.length > 7 && b[0] === 1); });
      s.once("error", () => ok(false));
    });
    const auth = "Basic " + Buffer.from(decodeURIComponent(u.username) + ":" + decodeURIComponent(u.password)).toString("base64");
    const api = fetch(mgmt + "/api/overview", { headers: { authorization: auth } })
      .then(r => r.status === 200, () => false);
    Promise.all([amqp, api]).then(([a, b]) => process.exit(a && b ? 0 : 1));
    setTimeout(() => process.exit(1), 3000).unref();
  ' "$1" "$2"
}

start_rabbitmq() { # -> 0 started, 1 failed (logs kept)
  local d amqp dist epmd mgmt i
  d="$(rabbit_dir)"
  rm -rf "$d"
  mkdir -p "$d/home" "$d/mnesia" "$d/log"
  read -r amqp epmd mgmt <<<"$(free_ports 3)"
  # The distribution port is fixed (RABBITMQ_DIST_PORT) and the CLI tools
  # take theirs from DIST_PORT+10000..+10010. The VM binds DIST first, long
  # before RabbitMQ opens its AMQP listener, so DIST must never equal a port
  # picked above (an earlier formula did for AMQP ports 32768-39999, and the
  # node died at boot with eaddrinuse). It comes from 20000-32767: below the
  # kernel's ephemeral range, so no other server is handed it later.
  dist="$(free_port_between 20000 32767 "$amqp" "$epmd" "$mgmt")" || { log "no free port for the Erlang distribution"; return 1; }
  echo "$amqp $dist $epmd $mgmt" >"$d/ports"
  # A private Erlang cookie: the CLI tools read $HOME/.erlang.cookie.
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$d/home/.erlang.cookie"
  chmod 400 "$d/home/.erlang.cookie"
  echo "[rabbitmq_management]." >"$d/enabled_plugins"
  : >"$d/rabbitmq-env.conf"
  cat >"$d/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$amqp
management.tcp.ip = 127.0.0.1
management.tcp.port = $mgmt
default_user = $rabbit_user
default_pass = $rabbit_pass
default_vhost = /
default_user_tags.administrator = true
default_permissions.configure = .*
default_permissions.read = .*
default_permissions.write = .*
loopback_users = none
log.file.level = info
log.console = false
disk_free_limit.absolute = 50MB
CONF
  # Keep the node small: no stats-heavy collection on a shared machine.
  cat >"$d/advanced.config" <<CONF
[{rabbitmq_management, [{rates_mode, none}]}].
CONF
  cat >"$d/env" <<ENVF
export DLQCTL_AMQP_URL=amqp://$rabbit_user:$rabbit_pass@127.0.0.1:$amqp/
export DLQCTL_AMQP_MANAGEMENT_URL=http://127.0.0.1:$mgmt
export DLQCTL_AMQP_USERNAME=$rabbit_user
export DLQCTL_AMQP_PASSWORD=$rabbit_pass
ENVF
  local bin
  bin="$(rabbit_bin rabbitmq-server)"
  [[ -n "$bin" ]] || { log "rabbitmq-server not found"; return 1; }
  rabbit_exec spawn "$d/log/startup.log" "$bin" >"$d/server.pid"
  for i in $(seq 1 300); do # up to ~60 s (3.10 boots in ~5-15 s on a busy machine)
    if probe_rabbitmq "amqp://$rabbit_user:$rabbit_pass@127.0.0.1:$amqp/" "http://127.0.0.1:$mgmt"; then
      # Still there a moment later: a node that answered once and then
      # failed a late boot step is a failed start, not a running node.
      sleep 1
      if ! alive "$d/server.pid" rabbitmq-server ||
        ! probe_rabbitmq "amqp://$rabbit_user:$rabbit_pass@127.0.0.1:$amqp/" "http://127.0.0.1:$mgmt"; then
        break
      fi
      # The pid is the server script: it turns SIGTERM into a clean stop.
      log "rabbitmq      on amqp://127.0.0.1:$amqp/ management http://127.0.0.1:$mgmt (pid $(cat "$d/server.pid")), data in $d"
      return 0
    fi
    alive "$d/server.pid" rabbitmq-server || break
    sleep 0.2
  done
  log "rabbitmq did not come up; last log lines:"
  tail -n 10 "$d/log/startup.log" "$d/log/rabbit.log" >&2 2>/dev/null || true
  return 1
}

stop_rabbitmq() {
  local d pid i
  d="$(rabbit_dir)"
  [[ -d "$d" ]] || return 0
  if [[ -f "$d/ports" ]]; then
    if [[ -f "$d/server.pid" ]] && ! alive "$d/server.pid" rabbitmq-server && [[ -f "$d/log/startup.log" ]]; then
      # It died on its own: say so (in CI this is the only trace left).
      log "rabbitmq (pid $(cat "$d/server.pid")) had already exited; last log lines:"
      tail -n 5 "$d/log/startup.log" >&2 2>/dev/null || true
    fi
    if alive "$d/server.pid" rabbitmq-server; then
      pid="$(cat "$d/server.pid")"
      # rabbitmqctl stop shuts the node down cleanly; SIGTERM does too.
      kill -TERM "$pid" 2>/dev/null || true
      for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      if kill -0 "$pid" 2>/dev/null; then
        log "rabbitmq (pid $pid) ignored SIGTERM, killing"
        kill -KILL "$pid" 2>/dev/null || true
      fi
      log "stopped rabbitmq (pid $pid)"
    fi
    # Our epmd (started by the VM on our private port) outlives the node.
    local epmd
    epmd="$(awk '{print $3}' "$d/ports")"
    if [[ "$epmd" =~ ^[0-9]+$ ]]; then
      ERL_EPMD_PORT="$epmd" epmd -kill >/dev/null 2>&1 || true
      # epmd -kill refuses while names are registered; a stray one goes by pid.
      for pid in $(pgrep -x epmd 2>/dev/null || true); do
        if tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qx "ERL_EPMD_PORT=$epmd"; then
          kill -TERM "$pid" 2>/dev/null || true
        fi
      done
    fi
  fi
  # Only ever remove the folder this script created.
  [[ "$d" == */rabbitmq && -f "$d/ports" ]] && rm -rf "$d"
  return 0
}

status_rabbitmq() { # -> 0 ok
  local d
  d="$(rabbit_dir)"
  if alive "$d/server.pid" rabbitmq-server; then
    echo "rabbitmq: pid $(cat "$d/server.pid") amqp://127.0.0.1:$(awk '{print $1}' "$d/ports")/ user $rabbit_user ($d/log)"
    rabbitmq_running || { echo "rabbitmq: not answering"; return 1; }
    return 0
  fi
  echo "rabbitmq: not running"
  return 1
}

# ensure_rabbitmq: start our node unless it runs and answers, then put its
# variables into the env file.
ensure_rabbitmq() {
  if ! rabbitmq_running; then
    install_rabbitmq
    local try ok=1
    for try in 1 2 3; do # a free port can be taken between probe and bind
      stop_rabbitmq
      if start_rabbitmq; then ok=0; break; fi
      log "retrying rabbitmq start ($try/3)"
    done
    [[ $ok == 0 ]] || { stop_rabbitmq; die "could not start rabbitmq; see the log lines above"; }
  fi
  merge_rabbitmq_env
}

merge_rabbitmq_env() {
  local f="$(rabbit_dir)/env"
  [[ -f "$stack_dir/env" && -f "$f" ]] || return 0
  { grep -v '^export DLQCTL_AMQP_' "$stack_dir/env"; cat "$f"; } >"$stack_dir/env.tmp"
  mv "$stack_dir/env.tmp" "$stack_dir/env"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  env) cmd_env ;;
  unenv) cmd_unenv ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|restart|env|unenv|status" >&2; exit 2 ;;
esac
