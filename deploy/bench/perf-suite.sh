#!/usr/bin/env bash
# The runs behind docs/PERFORMANCE.md, one after another; each prints its table and writes
# bench-report.json under target/bench/<name>/. Run from the repository root on an idle machine:
#   deploy/bench/perf-suite.sh            all runs (about 12 minutes)
#   deploy/bench/perf-suite.sh closed     one run by name
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

run() {
  local name="$1"; shift
  echo "=== $name: ./clawfleet bench $*"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  ./clawfleet bench --logs "target/bench/$name" "$@" | grep -v '^ *note: statement' || true
  echo "statements: see target/bench/$name/bench-report.json"
}

selected=("$@")
pick() { [ ${#selected[@]} -eq 0 ] || [[ " ${selected[*]} " == *" $1 "* ]]; }

pick closed   && run closed   --chats 64 --warmup-seconds 60 --seconds 30 --time-up
pick open500  && run open500  --rate 500 --chats 200 --warmup-seconds 60 --seconds 30
pick openai   && run openai   --api openai --chats 64 --warmup-seconds 30 --seconds 30
pick history  && run history  --api openai --history 200 --chats 64 --warmup-seconds 40 --seconds 30
pick cluster  && run cluster  --shape cluster --workers 2 --chats 64 --warmup-seconds 60 --seconds 30
pick inflight && run inflight --shape cluster --workers 1 --in-flight 10000 --model-latency-ms 2000 --warmup-seconds 60 --seconds 120
# The first run after a build makes the nodes' class-data archives; the second starts with them.
pick start5   && run start5-first --shape cluster --workers 4 --start-together --chats 8 --warmup-seconds 2 --seconds 3 \
              && run start5 --shape cluster --workers 4 --start-together --chats 8 --warmup-seconds 2 --seconds 3
