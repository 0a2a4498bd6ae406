#!/usr/bin/env bash
# Large single-statement transactions on a sysbench table (docs/BENCHMARKS.md "Large
# transactions"): INSERT ... SELECT, UPDATE and DELETE of every row of a 1M-row copy, each one
# autocommit statement; prints each statement's time and the server's RSS/peak.
# usage: bench/big-dml.sh ZIPDB_BIN    (ROWS=1000000)
set -uo pipefail
BIN=$1; W=/dev/shm/big-dml; rm -rf $W; mkdir -p $W
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$BIN" serve --data-dir $W/data --port $PORT --pool-mb 512 > $W/log 2>&1 & PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf $W' EXIT
for _ in $(seq 1 600); do mariadb -h127.0.0.1 -P$PORT -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 0.1; done
mariadb -h127.0.0.1 -P$PORT -uroot -e "create database sbtest"
sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest \
  --tables=1 --table-size=${ROWS:-1000000} --threads=1 oltp_read_write prepare > $W/sb.out 2>&1 || { tail $W/sb.out; exit 1; }
rss() { awk '/VmRSS|VmHWM/{printf "%s %d MB  ", $1, $2/1024}' /proc/$PID/status; echo; }
echo "after prepare: $(rss)"
q() { local t0=$(date +%s.%N); mariadb -h127.0.0.1 -P$PORT -uroot sbtest -e "$1" 2>&1 | tail -2; local t1=$(date +%s.%N); echo "  $(python3 -c "print(f'{$t1-$t0:.1f}')") s: $1 | $(rss)"; }
q "create table copy (id int not null auto_increment primary key, k int not null default 0, c char(120) not null default '', pad char(60) not null default '', key k_1 (k))"
q "insert into copy select * from sbtest1"
q "update copy set c = concat('y', substr(c, 2))"
q "select count(*), sum(c like 'y%') from copy"
q "delete from copy"
q "select count(*) from copy"
