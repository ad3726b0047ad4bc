#!/bin/sh
# The conformance client for auth scenarios: the suite passes the client's credentials in MCP_CONFORMANCE_CONTEXT
# (JSON), and the importer reads a client secret only from an environment variable (mcp_servers[].oauth's
# client_secret_env), so the secret moves there, then the example client runs (FISK_AI_CONFORMANCE_CLIENT, set by
# run.sh) with the URL the suite appends.
set -eu
MCP_CONFORMANCE_CLIENT_SECRET=$(python3 -c 'import json, os; print(json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"])["client_secret"])')
export MCP_CONFORMANCE_CLIENT_SECRET
exec "$FISK_AI_CONFORMANCE_CLIENT" "$@"
