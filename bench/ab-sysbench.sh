#!/usr/bin/env bash
# A/B: two zipdb release binaries (or one binary with two sets of flags) under the same sysbench
# on /dev/shm, rounds interleaved.
# usage: [TESTS="oltp_point_select oltp_read_write"] [SECS=30] [ROUNDS=3] [THREADS="16"] \
#        [ARGS_BASE="..."] [ARGS_NEW="..."] [ENGINE="innodb ROW_FORMAT=COMPRESSED"] \
#        bench/ab-sysbench.sh BASE NEW
# e.g. the two thread_handling models of one binary at 16, 128 and 512 clients:
#   THREADS="16 128 512" ARGS_BASE="--thread-handling one-thread-per-connection" \
#   ARGS_NEW="--thread-handling pool-of-threads" bench/ab-sysbench.sh target/release/zipdb target/release/zipdb
set -euo pipefail
A=$1; B=$2; SECS=${SECS:-30}; ROUNDS=${ROUNDS:-3}
ENGINE=${ENGINE:-innodb ROW_FORMAT=COMPRESSED}
# A private folder and two free ports, so that two A/B runs on one machine do not collide.
W=$(mktemp -d /dev/shm/ab.XXXXXX)
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
declare -A PORT=([base]=$(free_port) [new]=$(free_port))
while [ "${PORT[base]}" = "${PORT[new]}" ]; do PORT[new]=$(free_port); done
declare -A BIN=([base]=$A [new]=$B) ARGS=([base]=${ARGS_BASE:-} [new]=${ARGS_NEW:-})
# 512 clients need 512 sockets each side, and more.
ulimit -n "$(ulimit -Hn)"
PIDS=()
for n in base new; do
  # shellcheck disable=SC2086
  "${BIN[$n]}" serve --data-dir $W/$n --port ${PORT[$n]} --pool-mb 128 ${ARGS[$n]} > $W/$n.log 2>&1 &
  PIDS+=($!)
done
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null; rm -rf "$W"' EXIT
sleep 3
sb() { sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=${PORT[$1]} --mysql-user=root --mysql-db=sbtest --tables=16 --table-size=10000 --mysql_storage_engine="$ENGINE" "${@:2}"; }
for n in base new; do
  mariadb -h127.0.0.1 -P${PORT[$n]} -uroot -e "create database sbtest"
  sb $n oltp_read_write --threads=4 prepare > /dev/null
done
for t in ${TESTS:-oltp_point_select oltp_read_write}; do
  for c in ${THREADS:-16}; do
    for r in $(seq 1 $ROUNDS); do
      for n in base new; do
        q=$(sb $n $t --threads=$c --time=$SECS --report-interval=0 run | grep -o "queries:.*per sec" | grep -o "([0-9.]* per" | tr -d '(per ')
        echo "$t clients $c round $r $n qps $q"
      done
    done
  done
done
