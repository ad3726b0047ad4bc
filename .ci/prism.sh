#!/usr/bin/env bash
# Install Stoplight Prism (pinned) for the Anthropic contract test (tests/anthropic_contract.rs) under target/,
# then print the absolute path of its binary on stdout; everything else goes to stderr.
#   export FISK_AI_PRISM="$(.ci/prism.sh)"
# 5.14.2 is the newest release whose CLI declares Node >= 18 (5.15+ want Node >= 24); nothing is fetched at run time.
set -euo pipefail
cd "$(dirname "$0")/.."

version=5.14.2
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
dir="$(cd "$target" && pwd)/prism-$version"
bin="$dir/node_modules/.bin/prism"

if [ ! -x "$bin" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
      apt-get update -qq >&2
      apt-get install -y -qq nodejs npm >&2
    else
      echo "prism.sh: npm is required to install @stoplight/prism-cli" >&2
      exit 1
    fi
  fi
  mkdir -p "$dir"
  # A private package.json keeps npm from walking up to some other project.
  [ -f "$dir/package.json" ] || echo '{"name":"fisk-ai-prism","private":true}' >"$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@stoplight/prism-cli@$version" >&2
fi

echo "prism $("$bin" --version)" >&2
echo "$bin"
