#!/usr/bin/env bash
# A new client's point-select latency with 10,000 idle connections open against an idle
# server (issue 18: within 10%). One zipdb on /dev/shm; sysbench oltp_point_select with one
# client on one 10k-row table, alternately with and without IDLE idle authenticated
# connections (held by a Python process), ROUNDS times.
# usage: [IDLE=10000] [SECS=15] [ROUNDS=2] [ARGS="--thread-handling pool-of-threads"] \
#        bench/idle-latency.sh target/release/zipdb
set -euo pipefail
BIN=$1; IDLE=${IDLE:-10000}; SECS=${SECS:-15}; ROUNDS=${ROUNDS:-2}; PORT=${PORT:-3411}
W=/dev/shm/idle-latency; rm -rf $W; mkdir -p $W
ulimit -n "$(ulimit -Hn)"
# shellcheck disable=SC2086
"$BIN" serve --data-dir $W/data --port $PORT --pool-mb 128 --max-connections $((IDLE + 100)) ${ARGS:-} > $W/server.log 2>&1 &
SERVER=$!
HOLDER=""
trap 'kill $SERVER $HOLDER 2>/dev/null || true' EXIT
sleep 3
sb() { sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=10000 "$@"; }
mariadb -h127.0.0.1 -P$PORT -uroot -e "create database sbtest"
sb oltp_point_select prepare > /dev/null
run() {
  local out
  out=$(sb oltp_point_select --threads=1 --time=$SECS --report-interval=0 run)
  echo "$1 qps $(echo "$out" | grep -o 'queries:.*per sec' | grep -o '([0-9.]* per' | tr -d '(per ') \
avg_ms $(echo "$out" | awk '/avg:/ {print $2}') p95_ms $(echo "$out" | awk '/95th percentile:/ {print $3}') \
threads $(ls /proc/$SERVER/task | wc -l)"
}
for r in $(seq 1 $ROUNDS); do
  run "round $r idle-server"
  /usr/bin/python3 - "$PORT" "$IDLE" > $W/holder.log 2>&1 <<'PY' &
import sys, time, pymysql
port, n = int(sys.argv[1]), int(sys.argv[2])
conns = [pymysql.connect(host="127.0.0.1", port=port, user="root", database="sbtest") for _ in range(n)]
print("open", len(conns), flush=True)
time.sleep(3600)
PY
  HOLDER=$!
  until grep -q "^open" $W/holder.log 2>/dev/null; do
    kill -0 $HOLDER 2>/dev/null || { cat $W/holder.log; exit 1; }
    sleep 1
  done
  run "round $r with-$IDLE-idle"
  kill $HOLDER; wait $HOLDER 2>/dev/null || true; HOLDER=""
  sleep 2
done
