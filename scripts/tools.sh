#!/usr/bin/env bash
# Makes sure the command-line tools that the runbooks, scripts and their
# tests use are installed:
#   jq      the runbooks and scripts/canary-redrive.sh read dlqctl's JSON
#           with it. On Debian/Ubuntu as root it is installed with apt-get;
#           elsewhere the script says what to install.
#   DuckDB  @duckdb/node-api (pinned in scripts/duckdb/package.json, it
#           ships the engine binary): TestArchiveQueriesDocRunInDuckDB runs
#           the DuckDB queries of docs/archive-queries.md with it. Installed
#           with `npm ci` in scripts/duckdb, like scripts/stack.sh installs
#           the SQS emulator in scripts/sqs.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
duckdb_dir="$repo/scripts/duckdb"

ensure_jq() {
  if command -v jq >/dev/null 2>&1; then
    return 0
  fi
  if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    echo "tools: jq not found; installing it with apt-get" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >&2
    return 0
  fi
  echo "tools: jq is required (runbooks, scripts/canary-redrive.sh); install it (apt-get install jq / brew install jq) and run again" >&2
  exit 1
}

ensure_duckdb() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "tools: Node.js 20+ and npm are required (the DuckDB engine of the archive query test, the SQS emulator); install them and run again" >&2
    exit 1
  fi
  local want have=""
  want="$(node -p "require('$duckdb_dir/package.json').dependencies['@duckdb/node-api']")"
  if [[ -f "$duckdb_dir/node_modules/@duckdb/node-api/package.json" ]]; then
    have="$(node -p "require('$duckdb_dir/node_modules/@duckdb/node-api/package.json').version")"
  fi
  if [[ "$have" != "$want" ]]; then
    echo "tools: installing @duckdb/node-api $want (npm ci in scripts/duckdb)" >&2
    (cd "$duckdb_dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  fi
}

ensure_jq
ensure_duckdb
