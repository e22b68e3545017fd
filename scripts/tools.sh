#!/usr/bin/env bash
# Makes sure the command-line tools that the runbooks, scripts and their
# tests use are installed: jq (the runbooks and scripts/canary-redrive.sh
# read dlqctl's JSON with it). On Debian/Ubuntu as root it is installed with
# apt-get; elsewhere the script says what to install.
set -euo pipefail
if command -v jq >/dev/null 2>&1; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
  echo "tools: jq not found; installing it with apt-get" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >&2
  exit 0
fi
echo "tools: jq is required (runbooks, scripts/canary-redrive.sh); install it (apt-get install jq / brew install jq) and run again" >&2
exit 1
