#!/usr/bin/env bash
# A/B: two zipdb release binaries under the same sysbench on /dev/shm, rounds interleaved.
# usage: [TESTS="oltp_point_select oltp_read_write"] [SECS=30] [ROUNDS=3] bench/ab-sysbench.sh BASE NEW
set -euo pipefail
A=$1; B=$2; SECS=${SECS:-30}; ROUNDS=${ROUNDS:-3}
W=/dev/shm/ab; rm -rf $W; mkdir -p $W
declare -A PORT=([base]=3401 [new]=3402) BIN=([base]=$A [new]=$B)
for n in base new; do
  "${BIN[$n]}" serve --data-dir $W/$n --port ${PORT[$n]} --pool-mb 128 > $W/$n.log 2>&1 &
done
sleep 3
sb() { sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=${PORT[$1]} --mysql-user=root --mysql-db=sbtest --tables=16 --table-size=10000 --mysql_storage_engine="innodb ROW_FORMAT=COMPRESSED" "${@:2}"; }
for n in base new; do
  mariadb -h127.0.0.1 -P${PORT[$n]} -uroot -e "create database sbtest"
  sb $n oltp_read_write --threads=4 prepare > /dev/null
done
for t in ${TESTS:-oltp_point_select oltp_read_write}; do
  for r in $(seq 1 $ROUNDS); do
    for n in base new; do
      q=$(sb $n $t --threads=16 --time=$SECS --report-interval=0 run | grep -o "queries:.*per sec" | grep -o "([0-9.]* per" | tr -d '(per ')
      echo "$t round $r $n qps $q"
    done
  done
done
pkill -f "data-dir $W/" || true
