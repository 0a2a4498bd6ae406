#!/usr/bin/env bash
# Times a sysbench prepare into a fresh server (issue 20 bulk load; docs/BENCHMARKS.md "Bulk load").
# usage: bench/load-time.sh KIND NAME [BIN]  KIND: zipdb-none | zipdb-fsst | innodb ; prints "NAME seconds"
# Env: TABLES (4) ROWS (200000) THREADS (4) PERF=1 (perf record the zipdb server) KEEP=1 (leave server running, print port)
set -euo pipefail
KIND=$1; NAME=$2; BIN=${3:-}
TABLES=${TABLES:-4}; ROWS=${ROWS:-200000}; THREADS=${THREADS:-4}
W=/dev/shm/bf-$NAME; rm -rf $W; mkdir -p $W
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
case $KIND in
  zipdb-*) codec=${KIND#zipdb-}
    ${PRE:-} "$BIN" serve --data-dir $W/data --port $PORT --pool-mb 1024 --flush-policy sync --codec $codec > $W/log 2>&1 &
    PID=$!; ENGINE="innodb COMPRESSION='$codec'";;
  innodb)
    mariadb-install-db --no-defaults --datadir=$W/data --auth-root-authentication-method=normal --skip-test-db >/dev/null 2>&1
    mariadbd --no-defaults --user=root --datadir=$W/data --socket=$W/sock --port=$PORT --bind-address=127.0.0.1 \
      --skip-grant-tables --max-connections=1000 --log-error=$W/err --pid-file=$W/pid \
      --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=1024M > $W/log 2>&1 &
    PID=$!; ENGINE="innodb ROW_FORMAT=DYNAMIC";;
esac
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf $W' EXIT
for _ in $(seq 1 600); do mariadb -h127.0.0.1 -P$PORT -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 0.1; done
mariadb -h127.0.0.1 -P$PORT -uroot -e "create database sbtest"
if [ -n "${PERF:-}" ]; then perf record -F ${PF:-499} ${PG:--g} -p $PID -o $W/../perf-$NAME.data >/dev/null 2>&1 & PP=$!; sleep 0.5; fi
t0=$(date +%s.%N)
sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest \
  --tables=$TABLES --table-size=$ROWS --threads=$THREADS --mysql_storage_engine="$ENGINE" --db-ps-mode=auto \
  oltp_read_write prepare > $W/sb.out 2>&1 || { cat $W/sb.out; exit 1; }
t1=$(date +%s.%N)
if [ -n "${PERF:-}" ]; then kill -INT $PP; wait $PP || true; fi
# The server's CPU seconds (user + system) as well: on a shared machine they vary less than
# the wall time does.
cpu=$(awk -v t=$(getconf CLK_TCK) '{printf "%.2f", ($14+$15)/t}' /proc/$PID/stat 2>/dev/null || echo "?")
echo "$NAME $(python3 -c "print(f'{$t1-$t0:.2f}')") s (server cpu $cpu s)"
if [ -n "${DUMP:-}" ]; then mariadb-dump -h127.0.0.1 -P$PORT -uroot sbtest > $DUMP; fi
