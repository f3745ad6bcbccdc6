#!/usr/bin/env bash
# 500 sagas at once, 50 ms a step, each engine in a fresh process on a fresh database, engines
# rotated per round. SQLite (a fresh file per run) by default; BACKEND=postgres gives each run a
# fresh PostgreSQL database (created on $PG_ADMIN's server, dropped after the run).
# Usage: ROUNDS=5 SAGAS=500 bash bench/group_rounds.sh > results.jsonl
#        BACKEND=postgres ROUNDS=5 bash bench/group_rounds.sh > results.jsonl
#        EXTRA=--one-at-a-time LATENCY=0 SAGAS=200 bash bench/group_rounds.sh   # one saga at a time
set -eu
ROUNDS=${ROUNDS:-5}; SAGAS=${SAGAS:-500}; LATENCY=${LATENCY:-0.05}; BACKEND=${BACKEND:-sqlite}
EXTRA=${EXTRA:-}
PG_ADMIN=${PG_ADMIN:-postgresql://root@127.0.0.1:5432/test}
if [ "$BACKEND" = postgres ]; then
  ENGINES=${ENGINES:-"sagagraph-pg-group sagagraph plain-postgres"}
else
  ENGINES=${ENGINES:-"sagagraph sagagraph-group plain-sqlite plain-memory"}
fi
tmp=$(mktemp -d)
for r in $(seq 1 "$ROUNDS"); do
  for e in $ENGINES; do
    rm -f "$tmp"/db*
    db="$tmp/db.sqlite"
    if [ "$BACKEND" = postgres ]; then
      name="sagagraph_bench_$$_${r}_$(echo "$e" | tr -c 'a-z0-9\n' '_')"
      psql -q "$PG_ADMIN" -c "CREATE DATABASE \"$name\""
      db="${PG_ADMIN%/*}/$name"
    fi
    python -m bench.concurrency --engine "$e" --latency "$LATENCY" --sagas "$SAGAS" --db "$db" $EXTRA \
      | sed "s/^/{\"round\": $r, \"backend\": \"$BACKEND\", \"row\": /; s/\$/}/"
    if [ "$BACKEND" = postgres ]; then
      psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)"
    fi
  done
  ENGINES="$(echo $ENGINES | awk '{for(i=2;i<=NF;i++) printf $i" "; print $1}')"
done
rm -rf "$tmp"
