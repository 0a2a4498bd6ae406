#!/usr/bin/env bash
# bench/big-dml.sh's statements on MariaDB InnoDB (ROW_FORMAT=DYNAMIC, 512 MB pool, durable
# commits), the yardstick of docs/BENCHMARKS.md "Bulk writes". usage: [ROWS=1000000] bench/big-dml-innodb.sh
set -uo pipefail
W=/dev/shm/inno-big; rm -rf $W; mkdir -p $W
mariadb-install-db --no-defaults --datadir=$W/data --auth-root-authentication-method=normal >/dev/null 2>&1
mariadbd --no-defaults --datadir=$W/data --socket=$W/sock --port=34998 --skip-grant-tables --user=root \
  --innodb-buffer-pool-size=512M --innodb-flush-log-at-trx-commit=1 --innodb-log-file-size=512M > $W/log 2>&1 & PID=$!
trap 'kill $PID; wait $PID; rm -rf $W' EXIT
for _ in $(seq 1 300); do mariadb -S $W/sock -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 0.2; done
mariadb -S $W/sock -uroot -e "create database sbtest"
sysbench --db-driver=mysql --mysql-socket=$W/sock --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=${ROWS:-1000000} \
  --mysql_storage_engine="innodb ROW_FORMAT=DYNAMIC" --threads=1 oltp_read_write prepare > $W/sb.out 2>&1 || { tail $W/sb.out; exit 1; }
q() { local t0=$(date +%s.%N); mariadb -S $W/sock -uroot sbtest -e "$1" 2>&1 | tail -2; local t1=$(date +%s.%N); echo "  $(python3 -c "print(f'{$t1-$t0:.1f}')") s: $1"; }
q "create table copy (id int not null auto_increment primary key, k int not null default 0, c char(120) not null default '', pad char(60) not null default '', key k_1 (k)) engine=innodb row_format=dynamic"
q "insert into copy select * from sbtest1"
q "update copy set c = concat('y', substr(c, 2))"
q "delete from copy"
