#!/bin/bash
# Compares cluster.schedulingPolicy round-robin ("rr") and "none" for svr with wrk.
# usage: scripts/bench-sched-policy.sh [ROUNDS=5] [SECONDS=4] [extra wrk args, e.g. -H "Connection: close"]
# Per round and policy: requests/s, requests per CPU-second of all svr processes (/proc/PID/stat
# utime+stime), how the work split between the 2 workers, and the primary's CPU ticks.
set -euo pipefail
ROUNDS=${1:-5}; SECS=${2:-4}; shift 2 2>/dev/null || true
HERE=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(mktemp -d /tmp/svr-sched-XXXXXX)
trap 'kill $PID 2>/dev/null || true; rm -rf "$DIR"' EXIT
mkdir "$DIR/web"
head -c 1024 /dev/zero | tr '\0' 'x' > "$DIR/web/1k.html"
PORT=$(node -e "const s=require('net').createServer().listen(0,()=>{console.log(s.address().port);s.close()})")
echo "{\"port\":$PORT,\"wwwroot\":\"web\",\"workers\":2}" > "$DIR/svr-config.json"
ticks() { for p in "$@"; do awk '{print $14+$15}' /proc/$p/stat; done | tr '\n' ' '; }
for r in $(seq 1 "$ROUNDS"); do
  for pol in rr none; do
    NODE_CLUSTER_SCHED_POLICY=$pol node "$HERE/svr.js" --config "$DIR/svr-config.json" >/dev/null 2>"$DIR/err" &
    PID=$!
    until grep -qs 'listening on' "$DIR/err"; do kill -0 $PID; sleep 0.05; done
    KIDS=$(pgrep -P $PID | tr '\n' ' ')
    T0=($(ticks $KIDS $PID))
    RPS=$(wrk -t2 -c64 -d"${SECS}s" "$@" "http://127.0.0.1:$PORT/1k.html" | awk '/Requests\/sec/{print $2}')
    T1=($(ticks $KIDS $PID))
    W1=$((T1[0]-T0[0])); W2=$((T1[1]-T0[1])); P=$((T1[2]-T0[2]))
    PER_CPU=$(echo "$RPS * $SECS * 100 / ($W1 + $W2 + $P)" | bc)
    echo "round $r policy=$pol req/s=$RPS req-per-cpu-s=$PER_CPU worker-ticks=$W1/$W2 primary-ticks=$P"
    kill $PID; wait $PID 2>/dev/null || true
  done
done
