#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance), run by .ci/run:
# - server scenarios against `cli mcp` serving this directory's app (commands named after the scenario tools a
#   server of CLI tools can offer), with baseline.yml listing the scenarios that cannot apply and why;
# - client scenarios (initialize, tools_call, sse-retry, auth/client-credentials-basic) against the importer, through
#   examples/mcp_conformance_client.rs.
# Usage: tests/conformance/run.sh CONFORMANCE_BIN, with the two examples built in target/debug/examples and a
# Node.js of 22 or newer on PATH.
set -euo pipefail
conformance=$1
here=$(cd "$(dirname "$0")" && pwd)
# Where cargo put the examples: CARGO_TARGET_DIR when set, as cargo itself reads it.
target_dir=${CARGO_TARGET_DIR:-$here/../../target}
case "$target_dir" in /*) ;; *) target_dir="$here/../../$target_dir" ;; esac
examples="$target_dir/debug/examples"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
# From this directory: the config's application_path is relative to the working directory.
(cd "$here" && exec "$examples/cli" mcp --config agent.yaml --port "$port") >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  grep -q '^listening on' "$log" && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
grep -q '^listening on' "$log" || { echo "cli mcp did not start:" >&2; cat "$log" >&2; exit 1; }

"$conformance" server --url "http://127.0.0.1:$port/" --suite all --expected-failures "$here/baseline.yml"
for scenario in initialize tools_call sse-retry; do
  "$conformance" client --command "$examples/mcp_conformance_client" --scenario "$scenario"
done
# OAuth client credentials (issue 28): the wrapper moves the scenario's secret into a variable for the importer.
FISK_AI_CONFORMANCE_CLIENT="$examples/mcp_conformance_client" \
  "$conformance" client --command "$here/client_credentials.sh" --scenario auth/client-credentials-basic
