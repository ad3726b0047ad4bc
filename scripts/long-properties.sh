#!/usr/bin/env bash
# The pre-release check (issue 34, part 4): every property at 1,000,000 generated cases: those of
# tests/properties.rs, and the clap argv property of tests/clap_argv.rs (a case there is a whole command tree).
#
# `.ci/run` runs each property at the counts tests/properties.rs justifies (10k in the normal suite, 60k-600k in
# the long variants), which fit its time limit. Before a release, run them all at 1M:
#
#   scripts/long-properties.sh            # every property, 1M cases each
#   scripts/long-properties.sh 200000     # another count
#
# The test binary is built with the `properties` profile (release speed with overflow checks and debug
# assertions, so an arithmetic overflow still fails a case) in a target directory of its own, so it never
# invalidates a debug build. Each property runs alone (one test thread) and its wall time is printed; a failure
# prints the shrunk input and stops the script with a non-zero status.
set -euo pipefail
cd "$(dirname "$0")/.."

cases="${1:-1000000}"
export FISK_AI_PROPERTY_CASES="$cases"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/properties}"

total=0
for target in properties clap_argv; do
  echo "==> building tests/$target.rs (profile properties)"
  bin=$(cargo test --profile properties --all-features --test "$target" --no-run --message-format json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == sys.argv[1] and m.get("executable"):
        print(m["executable"])' "$target")
  [ -n "$bin" ] || { echo "error: the $target test binary was not built" >&2; exit 1; }

  # The long variants, each at $cases cases (they read FISK_AI_PROPERTY_CASES).
  tests=$("$bin" --ignored --list --format terse | sed -n 's/: test$//p')
  [ -n "$tests" ] || { echo "error: no long property variants found in $bin" >&2; exit 1; }
  for t in $tests; do
    start=$(date +%s.%N)
    "$bin" --ignored --exact "$t" --test-threads 1 --quiet >/dev/null
    secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
    total=$(python3 -c "import sys; print(f'{float(sys.argv[1]) + float(sys.argv[2]):.1f}')" "$total" "$secs")
    printf '%-110s %8s s\n' "$t ($cases cases)" "$secs"
  done
done
echo "==> ok: every property held at $cases cases ($total s in all)"
