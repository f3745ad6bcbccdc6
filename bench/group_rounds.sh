#!/usr/bin/env bash
# 500 sagas at once, 50 ms a step, each engine in a fresh process, engines rotated per round.
# Usage: ROUNDS=5 SAGAS=500 bash bench/group_rounds.sh > results.jsonl
set -eu
ROUNDS=${ROUNDS:-5}; SAGAS=${SAGAS:-500}; LATENCY=${LATENCY:-0.05}
ENGINES=${ENGINES:-"sagagraph sagagraph-group plain-sqlite plain-memory"}
tmp=$(mktemp -d)
for r in $(seq 1 "$ROUNDS"); do
  for e in $ENGINES; do
    rm -f "$tmp"/db*
    python -m bench.concurrency --engine "$e" --latency "$LATENCY" --sagas "$SAGAS" --db "$tmp/db.sqlite" \
      | sed "s/^/{\"round\": $r, \"row\": /; s/\$/}/"
  done
  ENGINES="$(echo $ENGINES | awk '{for(i=2;i<=NF;i++) printf $i" "; print $1}')"
done
rm -rf "$tmp"
