#!/usr/bin/env bash
# Times a mariadb-dump restore into a fresh server (issue 20 bulk load; docs/BENCHMARKS.md "Bulk load").
# usage: bench/restore-time.sh KIND NAME [BIN]  (DUMPFILE env: the dump to load) -> "NAME seconds"
set -euo pipefail
KIND=$1; NAME=$2; BIN=${3:-}
W=/dev/shm/br-$NAME; rm -rf $W; mkdir -p $W
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
case $KIND in
  zipdb-*) codec=${KIND#zipdb-}
    "$BIN" serve --data-dir $W/data --port $PORT --pool-mb 1024 --flush-policy sync --codec $codec > $W/log 2>&1 &
    PID=$!;;
  innodb)
    mariadb-install-db --no-defaults --datadir=$W/data --auth-root-authentication-method=normal --skip-test-db >/dev/null 2>&1
    mariadbd --no-defaults --user=root --datadir=$W/data --socket=$W/sock --port=$PORT --bind-address=127.0.0.1 \
      --skip-grant-tables --max-connections=1000 --log-error=$W/err --pid-file=$W/pid \
      --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=1024M --default-storage-engine=InnoDB \
      --innodb-default-row-format=dynamic > $W/log 2>&1 &
    PID=$!;;
esac
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf $W' EXIT
for _ in $(seq 1 600); do mariadb -h127.0.0.1 -P$PORT -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 0.1; done
mariadb -h127.0.0.1 -P$PORT -uroot -e "create database sbtest"
t0=$(date +%s.%N)
mariadb -h127.0.0.1 -P$PORT -uroot sbtest < $DUMPFILE
t1=$(date +%s.%N)
n=$(mariadb -h127.0.0.1 -P$PORT -uroot -N sbtest -e "select count(*) from sbtest1")
if [ -n "${REDUMP:-}" ]; then mariadb-dump -h127.0.0.1 -P$PORT -uroot sbtest > $REDUMP; fi
echo "$NAME $(python3 -c "print(f'{$t1-$t0:.2f}')") s (sbtest1 rows $n)"
