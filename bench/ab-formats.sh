#!/usr/bin/env bash
# Table formats and server flags under sysbench oltp_read_write, one fresh server per run, runs
# interleaved: what "Leaf views" in docs/BENCHMARKS.md used. DIR is where the data directories
# go (default /dev/shm; for a real disk pass a directory on it and `--direct-io` in the flags).
# usage: [ROUNDS=2] [SECS=20] [POOL_MB=128] [ROWS=10000] [DIR=/dev/shm] bench/ab-formats.sh ZIPDB \
#          "LABEL:FORMAT[:server flags]" ...
# e.g.   bench/ab-formats.sh target/release/zipdb none:none fsst:fsst "fsst_views:fsst:--leaf-views"
# Prints one line per run: label, transactions per second, and the server's Zipdb_pool_views_*
# counters.
set -euo pipefail
Z=$1; shift
ROUNDS=${ROUNDS:-2}; SECS=${SECS:-20}; POOL_MB=${POOL_MB:-128}; ROWS=${ROWS:-10000}
DIR=${DIR:-/dev/shm}
run() {
  local label=$1 fmt=$2 flags=$3
  local dir=$DIR/ab-formats-$label port=$((13300 + RANDOM % 500))
  rm -rf "$dir"; mkdir -p "$dir"
  # shellcheck disable=SC2086
  "$Z" serve --data-dir "$dir" --port $port --pool-mb "$POOL_MB" --flush-policy sync $flags \
    > "$dir.log" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do mariadb -h127.0.0.1 -P$port -uroot -e 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
  mariadb -h127.0.0.1 -P$port -uroot -e 'create database sbtest'
  local sb=(sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$port --mysql-user=root
    --mysql-db=sbtest --tables=16 --table-size="$ROWS"
    "--mysql_storage_engine=innodb COMPRESSION='$fmt'" --db-ps-mode=auto)
  "${sb[@]}" --threads=4 oltp_read_write prepare > /dev/null
  "${sb[@]}" --threads=16 --time=6 oltp_read_write run > /dev/null
  local tps
  tps=$("${sb[@]}" --threads=16 --time="$SECS" oltp_read_write run | grep "transactions:" \
    | sed 's/.*(\([0-9.]*\) per sec.*/\1/')
  local views
  views=$(mariadb -h127.0.0.1 -P$port -uroot -N -e "show status like 'Zipdb_pool_views_%'" \
    | awk '{printf "%s=%s ", $1, $2}')
  echo "$label pool_mb=$POOL_MB tps=$tps $views"
  kill $pid; wait $pid 2>/dev/null || true
  rm -rf "$dir" "$dir.log"
}
for _ in $(seq "$ROUNDS"); do
  for spec in "$@"; do
    IFS=: read -r label fmt flags <<< "$spec"
    run "$label" "$fmt" "${flags:-}"
  done
done
