#!/usr/bin/env bash
# Where connection scaling goes on a small machine: sysbench oltp_read_write at a low and a high
# client count against one server, reporting QPS and the CPU seconds per 1,000 queries spent by
# the server and by sysbench itself (from /proc and getrusage). When client and server share the
# cores, QPS(high)/QPS(low) cannot exceed (s_low + c_low) / (s_high + c_high), and even a server
# whose cost per query did not change with the client count is capped at
# (s_low + c_low) / (s_low + c_high): that is the client's own share of the loss.
#
# usage: [SERVER=zipdb|mariadb] [ARGS="..."] [CLIENTS="16 128"] [SECS=20] [ROUNDS=2] \
#        [ENGINE="innodb ROW_FORMAT=COMPRESSED"] bench/scaling-cpu.sh [zipdb binary]
# e.g.   ARGS="--thread-handling pool-of-threads" bench/scaling-cpu.sh target/release/zipdb
#        SERVER=mariadb ARGS="--thread-handling=pool-of-threads" ENGINE=innodb bench/scaling-cpu.sh
set -euo pipefail
BIN=${1:-target/release/zipdb}
SERVER=${SERVER:-zipdb}; SECS=${SECS:-20}; ROUNDS=${ROUNDS:-2}; CLIENTS=${CLIENTS:-16 128}
W=$(mktemp -d /dev/shm/scaling-cpu.XXXXXX); PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ulimit -n "$(ulimit -Hn)"
if [ "$SERVER" = mariadb ]; then
    mkdir -p $W/data
    mariadb-install-db --no-defaults --datadir=$W/data --auth-root-authentication-method=normal >$W/install.log 2>&1
    # shellcheck disable=SC2086
    mariadbd --no-defaults --user="$(id -un)" --datadir=$W/data --socket=$W/sock --port=$PORT \
        --bind-address=127.0.0.1 --skip-grant-tables --innodb-buffer-pool-size=128M \
        --max-connections=2000 --max-prepared-stmt-count=200000 ${ARGS:-} --log-error=$W/log >/dev/null 2>&1 &
    ENGINE=${ENGINE:-innodb}
else
    # shellcheck disable=SC2086
    "$BIN" serve --data-dir $W/d --port $PORT --pool-mb 128 ${ARGS:-} >$W/log 2>&1 &
    ENGINE=${ENGINE:-innodb ROW_FORMAT=COMPRESSED}
fi
PID=$!
trap 'kill $PID 2>/dev/null || true; sleep 1; rm -rf $W' EXIT
for _ in $(seq 1 100); do mariadb -h127.0.0.1 -P$PORT -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 0.2; done
sb() { sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest \
    --tables=16 --table-size=10000 --mysql_storage_engine="$ENGINE" "$@"; }
mariadb -h127.0.0.1 -P$PORT -uroot -e "create database sbtest"
sb oltp_read_write --threads=4 prepare >/dev/null
sb oltp_read_write --threads=16 --time=10 run >/dev/null
ticks() { awk '{print $14 + $15}' /proc/$PID/stat; }
HZ=$(getconf CLK_TCK)
echo "server=$SERVER args='${ARGS:-}' engine='$ENGINE' secs=$SECS"
printf "%-6s %-8s %10s %14s %14s\n" round clients qps server_cpu/1kq client_cpu/1kq
for r in $(seq 1 "$ROUNDS"); do
    for c in $CLIENTS; do
        t0=$(ticks)
        out=$( { /usr/bin/time -f "CPU %U %S" sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT \
            --mysql-user=root --mysql-db=sbtest --tables=16 --table-size=10000 oltp_read_write \
            --threads=$c --time=$SECS --report-interval=0 run; } 2>&1)
        t1=$(ticks)
        q=$(echo "$out" | grep -o "queries: *[0-9]*" | grep -o "[0-9]*$")
        qps=$(echo "$out" | grep -o "queries:.*per sec" | grep -o "([0-9.]* per" | tr -d '(per ')
        read -r cu cs < <(echo "$out" | grep "^CPU" | awk '{print $2, $3}')
        awk -v r=$r -v c=$c -v qps=$qps -v q=$q -v st=$((t1 - t0)) -v hz=$HZ -v cu=$cu -v cs=$cs \
            'BEGIN { printf "%-6s %-8s %10.0f %14.3f %14.3f\n", r, c, qps, st / hz / q * 1000, (cu + cs) / q * 1000 }'
    done
done
